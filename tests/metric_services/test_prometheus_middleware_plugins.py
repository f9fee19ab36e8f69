"""The worker's Prometheus middleware names no family: a plugin family's worker counts under its own
`family` label, apart from another plugin's (holistic_worker_* series)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from tests.conftest import drain
from tests.factories import prediction
from tests.plugins import plugins_site, two_plugins  # noqa: F401  (fixtures)

SERIES = ("holistic_worker_batches_applied_total", "holistic_worker_predictions_applied_total")


def counts(family: str) -> tuple[float, float]:
    return tuple(REGISTRY.get_sample_value(name, {"family": family}) or 0.0 for name in SERIES)  # type: ignore[return-value]


@pytest.mark.usefixtures("two_plugins")
def test_two_plugin_workers_count_under_their_own_family_label(make_gateway, make_worker):
    gw = make_gateway(families="hallucination,brevity")
    before = {f: counts(f) for f in ("hallucination", "brevity")}
    with gw.client() as client:
        client.submit([prediction(f"a{i}", output="2") for i in range(3)], batch_id="b1", model="m")
        client.submit([prediction(f"b{i}", output="2") for i in range(2)], batch_id="b2", model="m")
        drain(make_worker("hallucination", gw.settings))
        client.submit([prediction("c0", output="2")], batch_id="b3", model="m")
        drain(make_worker("brevity", gw.settings))
    delta = {f: tuple(a - b for a, b in zip(counts(f), before[f], strict=True)) for f in before}
    # hallucination drained b1 and b2 (5 predictions); brevity, deployed from the start, all three (6)
    assert delta == {"hallucination": (2.0, 5.0), "brevity": (3.0, 6.0)}
