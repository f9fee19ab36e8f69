"""gateway/paired.py's join of two models' instance states into paired cells, without Redis."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gateway.paired import MIN_PAIRS, cells
from holistic.compare.significance import MCNEMAR_EXACT, PAIRED_Z
from holistic.families import paired_direction
from holistic.families.registry import load_family
from holistic.stats.instance_state import State


def test_shared_slots_become_cells_and_rare_ones_do_not():
    n = MIN_PAIRS + 2  # 12 shared instances
    before = {f"i{k}": State(1, {"o": 1.0, f"v:{k}": 1.0, "tox": 0.1 * (k % 3)}) for k in range(n)}
    after = {f"i{k}": State(1, {"o": float(k >= 4), f"v:{k}": 0.0, "tox": 0.1 * (k % 3) + 0.05}) for k in range(n)}
    after["only-after"] = State(1, {"o": 0.0})
    out = {c.name: c for c in cells("robustness", before, after)}
    assert sorted(out) == ["robustness/paired:o", "robustness/paired:tox"]  # "v:<k>": one instance each, no cell
    o = out["robustness/paired:o"]
    assert (o.count, o.before, o.after) == (n, 1.0, pytest.approx(8 / 12))
    assert o.test is not None and o.test.method == MCNEMAR_EXACT and o.test.p == pytest.approx(2 / 2**4)  # 4 vs 0
    tox = out["robustness/paired:tox"]
    assert tox.test is not None and tox.test.method == PAIRED_Z and tox.test.difference == pytest.approx(0.05)
    assert cells("robustness", dict(list(before.items())[: MIN_PAIRS - 1]), after) == []


def test_families_declare_which_way_a_paired_slot_is_better():
    """Robustness and fairness slots are correctness (higher better), toxicity's "max" a toxicity (lower
    better); bias's and retrieval's slots have no direction, nor does a family that does not declare one."""
    for name in ("robustness", "fairness"):
        family = load_family(name)
        for slot in ("o", "p:typos", "exact_match/o", "f1_score/p:typos"):
            assert paired_direction(family, slot) == 1, (name, slot)
        assert paired_direction(family, "unscored:exact_match") == 0
    assert paired_direction(load_family("toxicity"), "max") == -1
    assert paired_direction(load_family("bias"), "o") == paired_direction(load_family("bias"), "v:gender:ab12") == 0
    assert paired_direction(load_family("retrieval"), "r:d1,d2") == 0
    sys.path.insert(0, str(Path(__file__).parents[1] / "plugin_family"))
    try:
        from holistic_hallucination import FAMILY  # a plugin that declares nothing
    finally:
        sys.path.pop(0)
    assert paired_direction(FAMILY, "o") == 0

    class Odd:
        def paired_direction(self, slot: str) -> object:
            return {"a": True, "b": 2, "c": -1}[slot]

    assert [paired_direction(Odd(), s) for s in "abc"] == [0, 0, -1]  # type: ignore[arg-type]
