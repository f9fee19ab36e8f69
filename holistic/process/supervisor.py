"""One way to run child processes: start them, restart any that dies, stop them all.

`holistic up` runs its stack this way (gateway, a worker per family, janitor, dashboard) and
`holistic gateway --processes N` its N gateway processes on one port. A child that dies is restarted
at the next look (twice a second) with its own environment; the work it held is reclaimed by its
siblings or by itself once back. Stopping sends SIGTERM to every child, waits out a grace period for
them all, then SIGKILLs what is left. SIGTERM or SIGINT to the supervisor itself stop it through
holistic/process/stop_signal.py (a handler that cannot deadlock).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from holistic.process.stop_signal import stop_on_signals

log = logging.getLogger("holistic.process.supervisor")

LOOK_S = 0.5


@dataclass
class Child:
    name: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)  # the child's whole environment
    log_path: Path | None = None  # None: the child writes to this process's stdout and stderr
    proc: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = None
    restarts: int = 0


class Supervisor:
    def __init__(self, children: list[Child], grace_s: float = 15.0) -> None:
        self.children = children
        self.grace_s = grace_s
        self.stopping = threading.Event()

    def start(self) -> None:
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        out: IO[bytes] | None = None
        if child.log_path is not None:
            child.log_path.parent.mkdir(parents=True, exist_ok=True)
            if child.log_file is None:
                child.log_file = open(child.log_path, "ab")  # noqa: SIM115 (closed in stop)
            out = child.log_file
        child.proc = subprocess.Popen(child.args, env=child.env or None, stdout=out, stderr=out)

    def supervise_once(self) -> None:
        """Restart any child that died."""
        for child in self.children:
            if child.proc is not None and child.proc.poll() is not None and not self.stopping.is_set():
                child.restarts += 1
                log.warning("%s (pid %d) exited with %s; restarting (#%d)", child.name, child.proc.pid,
                            child.proc.returncode, child.restarts)  # fmt: skip
                self._spawn(child)

    def run(self, handle_signals: bool = True) -> None:
        """Supervise until SIGTERM or SIGINT (handle_signals) or until `stopping` is set; then stop."""
        if handle_signals:
            stop_on_signals(self.stopping)
        while not self.stopping.wait(LOOK_S):
            self.supervise_once()
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for child in self.children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s (pid %d) ignored SIGTERM for %.0f s: killed", child.name, child.proc.pid, self.grace_s)
                child.proc.kill()
                child.proc.wait()
            if child.log_file is not None:
                child.log_file.close()
                child.log_file = None
