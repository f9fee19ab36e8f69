"""A benchmark's figures as a dated record: benchmarks/results/<benchmark>-<UTC time>.json.

Each figure sits beside the alternative a user would pick, measured in the same run, with the ratio
between them and the goal it is held to. The record names the machine (CPU model, cores, memory, load
average before the run), the command and the commit, so a figure is never read without its conditions.
`tools/gen_docs.py` renders every record into docs/reference/benchmarks.md. A script records when
HOLISTIC_BENCH_RECORD=1 (`./dev bench` sets it); otherwise it only prints, as before.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Figure:
    """One measured figure and, where there is one, the alternative measured in the same run."""

    name: str
    value: float
    unit: str
    alternative: str = ""  # what a user would pick instead ("HELM 0.5.16's metric code", "raw XADD")
    alternative_value: float | None = None
    higher_is_better: bool = True
    goal: str = ""  # e.g. ">= 100x"; empty: no goal
    met: bool | None = None  # whether the goal is met; None without a goal
    note: str = ""  # what limits the figure, in one sentence

    @property
    def ratio(self) -> float | None:
        """How many times better than the alternative (>1: better), None without one."""
        if self.alternative_value in (None, 0) or self.value == 0:
            return None
        alt = float(self.alternative_value)  # type: ignore[arg-type]
        return self.value / alt if self.higher_is_better else alt / self.value


@dataclass
class Record:
    benchmark: str
    when: str
    command: str
    commit: str
    machine: dict[str, object]
    figures: list[Figure] = field(default_factory=list)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, object]:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": cores,
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip()  # fmt: skip
        return out.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return ""


def enabled() -> bool:
    return os.environ.get("HOLISTIC_BENCH_RECORD", "") not in ("", "0", "false")


def record(benchmark: str, figures: list[Figure], argv: list[str] | None = None) -> Path | None:
    """Write the record when recording is on; return its path (None when off)."""
    if not enabled() or not figures:
        return None
    argv = sys.argv if argv is None else argv
    module = f"python -m benchmarks.{benchmark}"
    rec = Record(
        benchmark=benchmark,
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        command=" ".join([module, *map(shlex.quote, argv[1:])]),
        commit=_commit(),
        machine=machine(),
        figures=figures,
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{benchmark}-{rec.when.replace(':', '')}.json"
    path.write_text(json.dumps(asdict(rec), indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"recorded {path.relative_to(RESULTS.parent.parent)}")
    return path


def load_all(directory: Path = RESULTS) -> list[Record]:
    """Every record, oldest first."""
    out = []
    for path in sorted(directory.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw["figures"] = [Figure(**f) for f in raw.get("figures", [])]
        out.append(Record(**raw))
    return sorted(out, key=lambda r: (r.when, r.benchmark))
