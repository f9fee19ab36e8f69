"""A settings file re-read when it changes (the tokens file, the retention file): one rule for when to read it."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from holistic.errors import ConfigError

Stamp = tuple[float, int]


def stamp_to_read(
    path: Path, variable: str, what: str, previous: Stamp | None, force: bool, log: logging.Logger
) -> Stamp | None:
    """The file's (mtime, size) when it is to be read: always when forced, else only once it changed. None:
    unchanged, or gone (logged, and what was loaded stays: a deleted file must not open the door or drop a
    tenant's limits). A forced read of a missing file is a ConfigError naming `variable`."""
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        if force:
            raise ConfigError(f"{variable} {path} does not exist") from exc
        log.error("%s file %s disappeared; keeping the %s loaded before", what, path, what)
        return None
    stamp = (st.st_mtime, st.st_size)
    return None if not force and stamp == previous else stamp


@dataclass
class Recheck:
    """At most one look at a watched file every `every_s`, whichever thread asks: the hot path (a request's
    token, a write's retention) pays one clock read, and only one thread re-reads."""

    every_s: float
    checked: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, reload: Callable[[], None]) -> None:
        now = time.monotonic()
        if now - self.checked >= self.every_s:
            with self._lock:
                if now - self.checked >= self.every_s:
                    self.checked = now
                    reload()
