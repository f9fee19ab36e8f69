"""The cores this process may use: what thread pools inside a worker are sized from.

os.cpu_count() is the machine's; a worker is often allowed less: a CPU affinity (taskset, a cpuset),
or a container's CPU limit (a cgroup quota: Kubernetes' `limits.cpu`, `docker run --cpus`). A pool
sized past it makes its threads wait on each other, and spin while they wait.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def _quota(root: Path) -> float | None:
    """CPUs of the cgroup quota (v2 cpu.max, else v1 cfs_quota_us / cfs_period_us); None when unlimited."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota.strip() == "max":
            return None
        return int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return q / p if q > 0 and p > 0 else None


def available_cores(root: Path = CGROUP) -> int:
    """The affinity's CPUs, capped by the cgroup quota rounded up; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _quota(root)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)
