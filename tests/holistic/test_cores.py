"""The cores a worker's thread pools are sized from: its affinity capped by a container's CPU quota."""

from __future__ import annotations

import os

import pytest

from holistic.process.cores import available_cores

AFFINITY = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [
        ("max 100000\n", AFFINITY),  # no limit
        ("50000 100000\n", 1),  # half a CPU: one thread
        ("150000 100000\n", min(AFFINITY, 2)),  # 1.5 CPUs, rounded up
        ("6400000 100000\n", AFFINITY),  # a quota above the affinity: the affinity
    ],
)
def test_cgroup_v2_quota_caps_the_affinity(tmp_path, cpu_max, expected):
    (tmp_path / "cpu.max").write_text(cpu_max)
    assert available_cores(tmp_path) == expected


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    assert available_cores(tmp_path) == 1
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # unlimited
    assert available_cores(tmp_path) == AFFINITY


def test_no_cgroup_files_mean_the_affinity(tmp_path):
    assert available_cores(tmp_path) == AFFINITY
