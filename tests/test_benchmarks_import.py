"""Every benchmark script still imports and parses its arguments: benchmarks are not run in CI (they time
things), so without this a refactor can break one silently, as REGISTRY's removal broke family_cost.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_"))
LIBRARIES = {"cpu_profile", "helm_timed"}  # imported by the others or run inside HELM's environment


@pytest.mark.parametrize("name", [s for s in SCRIPTS if s not in LIBRARIES])
def test_benchmark_script_starts(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
