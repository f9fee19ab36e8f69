"""The dashboard's server against a live gateway: JSON API, the gateway's auth, errors, live SSE updates."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from holistic_dashboard.gateway_link import to_json
from tests.conftest import drain
from tests.factories import prediction

TOKEN = "s3cret-token"


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def sse(url: str) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs from a server-sent event stream."""
    with urllib.request.urlopen(url, timeout=30) as reply:
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        event, data = "message", []
        for raw in reply:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                yield event, json.loads("\n".join(data))
                event, data = "message", []


def test_api_reads_the_gateway_with_its_token(make_gateway, make_worker, make_dashboard):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    with gw.client(TOKEN) as c:
        c.submit([prediction(f"p{i}", latency_s=0.4 * (i + 1)) for i in range(3)], model="m1")
    drain(make_worker("accuracy"), make_worker("efficiency"))
    url = make_dashboard(gw.address, TOKEN).url

    status, body = get(url + "api/models")
    assert status == 200 and [(m["model"], m["acceptedPredictions"]) for m in body["models"]] == [("m1", "3")]

    status, p = get(url + "api/profile?model=m1&window=24h")
    assert status == 200 and p["model"] == "m1" and p["window"]["preset"] == "WINDOW_PRESET_LAST_DAY"
    dims = {d["kind"]: d for d in p["dimensions"]}
    assert dims["DIMENSION_KIND_ACCURACY"]["score"] == 1.0  # all three answered "Paris" to "Paris"
    # efficiency: latencies 0.4, 0.8, 1.2 s, all within the 2 s objective.
    assert dims["DIMENSION_KIND_EFFICIENCY"]["score"] == 1.0 and dims["DIMENSION_KIND_EFFICIENCY"]["count"] == "3"
    assert "score" not in dims["DIMENSION_KIND_CALIBRATION"]  # absent stays absent in the JSON

    status, cmp = get(url + "api/compare?model=m1&window=24h")  # the gateway's CompareProfiles
    assert status == 200 and cmp["before"]["counts"].get("windowPredictions", "0") == "0"
    cells = {c["name"]: c for c in cmp["cells"]}
    assert cells["accuracy"]["matters"] and cells["accuracy"]["why"] == "data appeared"
    assert cells["accuracy"]["verdict"] == "VERDICT_ONE_SIDED" and cmp["decision"] == "DECISION_NOT_ENOUGH_DATA"
    status, cmp_all = get(url + "api/compare?model=m1&window=all")  # all time has no window before it
    assert status == 200 and cmp_all["before"] is None and cmp_all["cells"] == [] and cmp_all["after"]["model"] == "m1"

    with urllib.request.urlopen(url, timeout=30) as page:
        html = page.read().decode()
    assert '<canvas id="radar"' in html and "/static/vendor/chart.umd.min.js" in html
    assert "http://" not in html and "https://" not in html  # nothing from the internet


def test_api_compare_serves_the_gateways_compare_profiles(make_gateway, make_worker, make_dashboard):
    """The day before: 40 of 40 right; today: 20 of 40. /api/compare is CompareProfiles's answer, cell for
    cell: accuracy worse with its test, Holm-adjusted p and interval, and the decision over every axis."""
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    now = time.time()
    before = [prediction(f"b{i}", latency_s=0.4, produced_at_s=now - 30 * 3600) for i in range(40)]
    after = [prediction(f"a{i}", latency_s=0.4, output="Paris" if i % 2 else "Rome") for i in range(40)]
    with gw.client(TOKEN) as c:
        c.submit(before + after, model="m1")
        drain(make_worker("accuracy"), make_worker("efficiency"))
        rpc = to_json(c.compare_profiles("m1", window="24h"))
    url = make_dashboard(gw.address, TOKEN).url
    status, cmp = get(url + "api/compare?model=m1&window=24h")
    assert status == 200 and cmp["cells"] == rpc["cells"]  # the RPC's cells, not a comparison of its own
    for key in ("decision", "summary", "multiplicity", "level", "worse", "notEnoughData"):
        assert cmp.get(key) == rpc.get(key), key
    acc = {c["name"]: c for c in cmp["cells"]}["accuracy"]
    assert (acc["before"], acc["after"], acc["difference"], acc["verdict"]) == (1.0, 0.5, -0.5, "VERDICT_WORSE")
    assert acc["lower"] < -0.5 < acc["upper"] < 0 and acc["p"] < acc["pAdjusted"] < 0.05 and acc["test"] == "Welch z"
    assert cmp["decision"] == "DECISION_WORSE" and "accuracy" in cmp["worse"] and cmp["multiplicity"] == "Holm"
    assert (cmp["before"]["counts"]["windowPredictions"], cmp["after"]["counts"]["windowPredictions"]) == ("40", "40")


def test_errors_are_shown_as_the_gateway_said_them(make_gateway, make_dashboard):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    with gw.client(TOKEN) as c:
        c.submit([prediction("p1")], model="m1")
    good = make_dashboard(gw.address, TOKEN).url
    status, body = get(good + "api/profile?model=ghost")
    assert status == 404 and body["error"]["code"] == "NOT_FOUND"
    status, body = get(good + "api/profile?model=m1&window=3y")
    assert status == 400 and "unknown window" in body["error"]["message"]
    status, body = get(good + "api/profile")
    assert status == 400 and body["error"]["message"] == "model is required"
    no_token = make_dashboard(gw.address, None).url
    status, body = get(no_token + "api/models")
    assert status == 502 and body["error"]["code"] == "UNAUTHENTICATED"
    events = sse(no_token + "api/events?window=all")
    event, data = next(events)
    assert event == "problem" and data["code"] == "UNAUTHENTICATED"


def test_events_stream_a_fresh_profile_when_a_batch_is_applied(make_gateway, live_workers, make_dashboard):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    client = gw.client(TOKEN)
    client.submit([prediction(f"a{i}") for i in range(3)], model="m1")
    url = make_dashboard(gw.address, TOKEN).url
    events = sse(url + "api/events?window=24h")
    event, models = next(events)
    assert event == "models" and [m["model"] for m in models] == ["m1"]
    deadline = time.monotonic() + 60
    seen: list[int] = []
    submitted = False
    for event, data in events:
        assert time.monotonic() < deadline, f"no profile with 5 predictions; saw {seen}"
        if event != "profile":
            continue
        n = int(data["counts"].get("windowPredictions", "0"))
        seen.append(n)
        if n == 3 and not submitted:  # the first 3 are applied; now 2 more while we listen
            client.submit([prediction(f"b{i}", output="Rome") for i in range(2)], model="m1")
            submitted = True
        if n == 5:
            acc = next(d for d in data["dimensions"] if d["kind"] == "DIMENSION_KIND_ACCURACY")
            assert acc["score"] == 0.6  # 3 of 5 right
            break
    assert submitted and seen[-1] == 5
    client.close()


def test_the_vendored_chart_library_is_the_pinned_npm_release():
    web = Path(__file__).resolve().parents[2] / "clients" / "web"
    pinned = json.loads((web / "package.json").read_text())["devDependencies"]["chart.js"]
    locked = json.loads((web / "package-lock.json").read_text())["packages"]["node_modules/chart.js"]["version"]
    vendored = (web / "holistic_dashboard" / "static" / "vendor" / "chart.umd.min.js").read_text()[:200]
    assert pinned == locked and f"Chart.js v{pinned}\n" in vendored
    assert "MIT License" in (web / "holistic_dashboard" / "static" / "vendor" / "chart.js.LICENSE.md").read_text()
