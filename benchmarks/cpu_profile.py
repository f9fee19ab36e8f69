"""Run a module under cProfile timed by CPU time (not wall time): on a busy shared machine a wall-clock
profile charges a process for the time it waited for a core; this one charges only what it ran.

    python -m benchmarks.cpu_profile OUT.prof [-m] holistic_app worker accuracy

The profile is written when the module exits (SIGTERM included: the service's processes exit cleanly on
it).
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
import time


def main() -> None:
    out, *rest = sys.argv[1:]
    module, *args = rest[1:] if rest[0] == "-m" else rest
    sys.argv = [module, *args]
    profiler = cProfile.Profile(time.process_time)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the module may install its own: both end cleanly
    profiler.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
