"""What a running `holistic up` serves, written where every other command looks for it.

`holistic up` writes `<data dir>/run.json` (HOLISTIC_DATA_DIR, default `.holistic` in the working
directory) once its gateway serves, and removes it when it stops: its process id, when it started,
the Redis every process of the stack uses (REDIS_URL as given, or the private server's unix
socket), the gateway's address and the dashboard's URL. A command that needs Redis and has no
REDIS_URL reads it (`with_local_redis`); so do client commands for the gateway's address when no
--target or HOLISTIC_TARGET is given. A file whose process is gone (killed with SIGKILL, a reboot)
is stale: it is ignored, and the error says so.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

FILE = "run.json"
DATA_DIR = Path(".holistic")  # HOLISTIC_DATA_DIR's default (holistic/settings.py)


@dataclass(frozen=True)
class RunState:
    pid: int
    started: float  # epoch seconds
    redis_url: str
    gateway: str
    dashboard: str | None = None


def path(data_dir: Path) -> Path:
    return data_dir / FILE


def write(data_dir: Path, state: RunState) -> Path:
    """Atomically: a reader never sees half a file. Readable by its owner only (a Redis URL may hold a password)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    target = path(data_dir)
    tmp = target.with_name(f".{FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(state), out, indent=2)
    os.replace(tmp, target)
    return target


def remove(data_dir: Path, pid: int | None = None) -> None:
    """Remove the file, if it is still this process's (`pid`) or whosever when pid is None."""
    target = path(data_dir)
    current = _load(target)
    if current is not None and pid is not None and current.pid != pid:
        return
    target.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _load(target: Path) -> RunState | None:
    try:
        raw = json.loads(target.read_text(encoding="utf-8"))
        return RunState(**raw)
    except (OSError, ValueError, TypeError):
        return None


def read(data_dir: Path) -> tuple[RunState | None, str]:
    """The running stack's state, or None and why not (for an error message)."""
    target = path(data_dir)
    if not target.exists():
        return None, f"no `holistic up` runs here ({target} does not exist)"
    state = _load(target)
    if state is None:
        return None, f"{target} is not a run-state file holistic wrote"
    if not _alive(state.pid):
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.started))
        return None, f"{target} is stale: the `holistic up` started {since} (pid {state.pid}) is gone"
    return state, ""


def running_gateway() -> str | None:
    """The gateway of the `holistic up` running from this directory (HOLISTIC_DATA_DIR), if one runs:
    what client commands talk to when neither --target nor HOLISTIC_TARGET is given. Read without the
    settings object: `holistic submit` does not pay for pydantic at start."""
    state, _ = read(Path(os.environ.get("HOLISTIC_DATA_DIR") or DATA_DIR))
    return state.gateway if state is not None else None
