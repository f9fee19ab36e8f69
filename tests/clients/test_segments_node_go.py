"""The Node and Go example CLIs print each segment's main metric per value, `other` last."""

from __future__ import annotations

from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401 (a fixture)
from tests.conftest import drain
from tests.factories import prediction

# K = 1: eu first (2 of 2 right: no spread, so Wilson's 0.342–1.000), then us and apac in `other` (1 of 2 right:
# 0.5 ± 1.96 * sqrt(0.5 / 2), clipped to 0–1)
WANT = (
    "  segment region: accuracy exact_match\n"
    "    eu               1.000 95% 0.342–1.000 n=2\n"
    "    (other)          0.500 95% 0.000–1.000 n=2\n"
)


def scored(make_gateway, make_worker, token: str):
    gw = make_gateway(tokens=token, families="accuracy", segment_keys=["region"], segment_top_k=1)
    preds = [
        prediction(pid, output=out) for pid, out in (("a", "Paris"), ("b", "Paris"), ("c", "Rome"), ("d", "Paris"))
    ]
    for p, region in zip(preds, ("eu", "eu", "us", "apac"), strict=True):
        p.metadata["region"] = region
    with gw.client(token) as c:
        c.submit(preds[:1], batch_id="b0", model="m")
        drain(make_worker("accuracy", gw.settings))
        c.submit(preds[1:], batch_id="b1", model="m")
        drain(make_worker("accuracy", gw.settings))
    return gw


def test_node_cli_profile_shows_segments(node, make_gateway, make_worker):  # noqa: F811
    gw = scored(make_gateway, make_worker, NODE_TOKEN)
    shown = run_node(node, "examples/cli.js", "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith(WANT), shown.stdout


def test_go_cli_profile_shows_segments(holistic_go, make_gateway, make_worker):  # noqa: F811
    gw = scored(make_gateway, make_worker, GO_TOKEN)
    shown = run_go_cli(holistic_go, "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith(WANT), shown.stdout
