"""holistic.family is a family author's whole API: the guide imports nothing else, and its recipes run."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import holistic.family as api

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "writing-a-family.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE, flags=re.DOTALL)


def _project_imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] in {"holistic", "gateway", "metric_services", "holistic_app"}}


def test_the_guide_imports_only_the_family_api():
    imports = set()
    for block in BLOCKS:
        try:
            imports |= _project_imports(block)
        except SyntaxError:
            continue  # signatures with "..." bodies are fine; fragments are checked by the names below
    assert imports == {"holistic.family"}
    for name in re.findall(r"from holistic\.family import ([\w, ]+)", GUIDE):
        for item in name.split(","):
            assert hasattr(api, item.strip()), item


def test_the_example_plugins_import_only_the_family_api():
    dirs = ("plugin_family", "plugin_family_two", "plugin_family_p95")
    paths = [p for d in dirs for p in (ROOT / "tests" / d).rglob("*.py")]
    assert len(paths) >= 3
    for path in paths:
        assert _project_imports(path.read_text(encoding="utf-8")) <= {"holistic.family"}, path


def test_every_exported_name_exists():
    assert sorted(api.__all__) == sorted(set(api.__all__))
    for name in api.__all__:
        assert hasattr(api, name), name


def test_the_offline_recipe_runs_and_any_split_gives_the_same_fold():
    sys.path.insert(0, str(ROOT / "tests" / "plugin_family"))
    try:
        from holistic_hallucination import FAMILY
    finally:
        sys.path.pop(0)
    recipe = next(b for b in BLOCKS if "fold_offline(FAMILY" in b)
    scope = {"FAMILY": FAMILY}
    exec(compile(recipe, "writing-a-family.md", "exec"), scope)
    one = scope["one"]
    # ten outputs "42" grounded in their references: grounded_numbers = 10 / 10, scored by the plugin
    metric = next(m for m in one.report.metrics if m.name == "grounded_numbers")
    assert (metric.value, metric.count) == (1.0, 10)


def test_the_p95_example_family_folds_percentiles_that_any_split_reproduces():
    """Outputs of 1..200 characters in scenario a, 1000 characters in b: a's p95 is the 190th value, 190,
    within the sketch's 1 %; b's is 1000; the mean over all 220 is exact; any split gives the same fold."""
    sys.path.insert(0, str(ROOT / "tests" / "plugin_family_p95"))
    try:
        from holistic_output_length import FAMILY
    finally:
        sys.path.pop(0)
    preds = [api.Prediction(id=f"a{i}", scenario="a", task=2, output="x" * i) for i in range(1, 201)]
    preds += [api.Prediction(id=f"b{i}", scenario="b", task=2, output="y" * 1000) for i in range(20)]
    one = api.fold_offline(FAMILY, [preds])
    split = api.fold_offline(FAMILY, [preds[:7], preds[7:150], preds[150:]])
    a = {m.name: m for m in one.scenarios["a"].metrics}
    assert a["output_chars_p95"].value == pytest.approx(190, rel=0.01)
    assert a["output_chars_p50"].value == pytest.approx(100, rel=0.01)
    assert a["output_chars_mean"].value == pytest.approx(100.5)
    assert {m.name: m.value for m in one.scenarios["b"].metrics}["output_chars_p95"] == pytest.approx(1000, rel=0.01)
    assert one.report.count == 220
    total = {m.name: m.value for m in one.report.metrics}
    assert total["output_chars_mean"] == pytest.approx((sum(range(1, 201)) + 20 * 1000) / 220)
    assert [m.value for m in one.report.metrics] == [m.value for m in split.report.metrics]
    assert [m.value for m in one.scenarios["a"].metrics] == [m.value for m in split.scenarios["a"].metrics]
