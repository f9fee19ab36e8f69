"""benchmarks/_results.py: a figure is recorded with its alternative, machine and command, and rendered."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks import _results
from benchmarks._results import Figure

ROOT = Path(__file__).resolve().parents[1]


def test_ratio_is_how_many_times_better_than_the_alternative():
    assert Figure("x", 300.0, "/s", "alt", 100.0).ratio == 3.0
    assert Figure("x", 2.0, "s", "alt", 8.0, higher_is_better=False).ratio == 4.0
    assert Figure("x", 5.0, "/s").ratio is None


def test_nothing_is_recorded_unless_asked(monkeypatch, tmp_path):
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.delenv("HOLISTIC_BENCH_RECORD", raising=False)
    assert _results.record("demo", [Figure("x", 1.0, "/s")]) is None
    assert list(tmp_path.iterdir()) == []


def test_a_record_names_machine_command_commit_and_renders(monkeypatch, tmp_path):
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.setenv("HOLISTIC_BENCH_RECORD", "1")
    fig = Figure("service", 1200.0, "predictions/s", "the loop", 400.0, True, ">= 3x", True, "a note")
    path = _results.record("demo", [fig], argv=["demo.py", "--rounds", "3"])
    raw = json.loads(path.read_text())
    assert raw["command"] == "python -m benchmarks.demo --rounds 3"
    assert raw["machine"]["cores"] >= 1 and raw["machine"]["cpu"]
    assert len(raw["machine"]["load_average"]) == 3
    (loaded,) = _results.load_all(tmp_path)
    assert loaded.figures == [fig]
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(_results, "load_all", lambda: [loaded])
    page = gen_docs.benchmarks_page()
    assert "| service | 1,200 predictions/s | the loop: 400 | 3.00x | >= 3x | yes |" in page
    assert "- service: a note" in page


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks" / "results").glob("*.json")), ids=lambda p: p.name)
def test_every_committed_record_is_complete(path):
    raw = json.loads(path.read_text())
    assert path.name.startswith(raw["benchmark"] + "-")
    assert raw["when"] and raw["command"].startswith("python -m benchmarks.")
    assert raw["machine"]["cores"] and raw["figures"]
    for f in raw["figures"]:
        assert (f["alternative"] == "") == (f["alternative_value"] is None), f["name"]
        assert (f["goal"] == "") == (f["met"] is None), f["name"]
