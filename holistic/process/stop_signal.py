"""Stop a blocking loop on SIGTERM or SIGINT without a handler that can deadlock.

`threading.Event.set()` takes the event's lock. Called from a signal handler it runs in the main
thread, between two bytecodes of whatever that thread was doing; when that was `Event.wait()`
holding the same lock on its way in or out, the handler waits for a lock its own thread holds, and
the process never stops (a container's PID 1 has no default SIGTERM action to fall back on). The
handler here only writes a byte to a pipe; a thread reads it and sets the event.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(event: threading.Event, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
    """Set `event` when one of `signals` arrives (call from the main thread, as `signal.signal` requires)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)

    def watch() -> None:
        os.read(read_end, 1)
        event.set()

    threading.Thread(target=watch, name="stop-signal", daemon=True).start()

    def handler(signum: int, frame: object) -> None:
        with contextlib.suppress(BlockingIOError):  # the pipe already holds a byte: the event will be set
            os.write(write_end, b"\0")

    for sig in signals:
        signal.signal(sig, handler)
