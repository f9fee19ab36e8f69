"""gateway/paired.py's join of two models' instance states into paired cells, without Redis."""

from __future__ import annotations

import pytest

from gateway.paired import MIN_PAIRS, cells
from holistic.compare.significance import MCNEMAR_EXACT, PAIRED_Z
from holistic.stats.instances import State


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
