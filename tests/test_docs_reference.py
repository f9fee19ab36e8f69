"""The documentation's reference pages are written from the code: a metric, a setting or an API field added
without regenerating them fails here (tools/gen_docs.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gen_docs  # noqa: E402

from holistic.settings import Settings  # noqa: E402


@pytest.mark.parametrize("page", sorted(gen_docs.PAGES))
def test_committed_page_equals_what_the_code_generates(page: str) -> None:
    committed = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
    assert committed == gen_docs.PAGES[page](), f"docs/reference/{page} is stale: run python tools/gen_docs.py"


def test_every_declared_metric_and_axis_is_in_the_metrics_reference() -> None:
    text = (ROOT / "docs" / "reference" / "metrics.md").read_text(encoding="utf-8")
    families = gen_docs._families()
    assert {f.name for f in families} >= {"accuracy", "calibration", "toxicity", "efficiency", "bias"}
    for family in families:
        section = text.split(f"\n## {family.name}\n", 1)[1].split("\n## ", 1)[0]
        for md in family.metrics:
            assert f"| `{md.name}` | {md.display_name} |" in section, (family.name, md.name)
        if family.axis is not None:
            assert f"radar axis `{family.axis.name}`" in section


def test_every_setting_is_in_the_settings_reference_with_its_default() -> None:
    text = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    assert "| `HOLISTIC_MAX_BATCH_PREDICTIONS` | int | `1000` |" in text
    assert "| `REDIS_URL` / `HOLISTIC_REDIS_URL` |" in text
    for name in Settings.model_fields:
        assert re.search(rf"`(HOLISTIC_)?{name.upper()}`", text), name


def test_the_api_reference_renders_every_rpc_and_field_comment() -> None:
    text = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    for rpc in ("SubmitPredictions", "GetProfile", "WatchProfile", "ListModels", "Perturb"):
        assert f"| `{rpc}` |" in text
    assert "| `groups` | 13 | `map<string, string>` | Demographic or slicing tags" in text


def test_every_benchmark_script_is_in_the_benchmarks_table() -> None:
    """A script that is not in docs/benchmarks.md's table is a figure nobody is told how to read (helm_timed is
    vs_helm's HELM side, run in HELM's own environment)."""
    table = (ROOT / "docs" / "benchmarks.md").read_text()
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_")} - {"helm_timed"}
    assert "helm_timed" in table
    assert sorted(s for s in scripts if f"| `{s}` |" not in table) == []
