"""Loads the Lua scripts that sit next to this module, for sync and asyncio clients alike."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

LUA_DIR = Path(__file__).parent / "lua"
NAMES = (
    "ingest", "mark_queued", "apply", "deadletter", "replay", "rate", "groups", "aof_state", "submit", "clock",
    "delete_begin", "retention_record", "segment_admit",
)  # fmt: skip


# shared functions, put before the script (after its `#!lua flags=` line, which must stay the first)
PRELUDES = {
    "groups": ("group_caps",),
    "submit": ("group_caps", "accepted", "deletion"),
    "mark_queued": ("accepted",),
    "ingest": ("deletion",),
}


@cache
def source(name: str) -> str:
    if name not in NAMES:
        raise KeyError(f"no Lua script {name!r}; have {NAMES}")
    text = (LUA_DIR / f"{name}.lua").read_text()
    shebang = text.partition("\n")[0] + "\n" if text.startswith("#!") else ""
    preludes = "".join((LUA_DIR / f"{p}.lua").read_text() for p in PRELUDES.get(name, ()))
    return shebang + preludes + text[len(shebang) :]


class Scripts:
    """redis-py Script objects (EVALSHA, falling back to EVAL once) bound to one client."""

    def __init__(self, client: Any) -> None:
        self.ingest = client.register_script(source("ingest"))
        self.mark_queued = client.register_script(source("mark_queued"))
        self.apply = client.register_script(source("apply"))
        self.deadletter = client.register_script(source("deadletter"))
        self.replay = client.register_script(source("replay"))
        self.rate = client.register_script(source("rate"))
        self.groups = client.register_script(source("groups"))
        self.aof_state = client.register_script(source("aof_state"))
        self.submit = client.register_script(source("submit"))
        self.delete_begin = client.register_script(source("delete_begin"))
        self.retention_record = client.register_script(source("retention_record"))
        self.segment_admit = client.register_script(source("segment_admit"))
