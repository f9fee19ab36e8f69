"""Efficiency family: compute() on a BatchEnvelope, merge the minute Stats, fold; values worked by hand.

The fixture batch, 10 timed predictions produced 2 s apart starting at ACCEPT - 100:

  i   latency  ttft   latency-ttft  prompt  completion  scenario
  0   0.12     0.02   0.10          100     10          a
  1   0.25     0.05   0.20          200     20          a
  2   0.31     0.06   0.25          150     25          a
  3   0.47     0.07   0.40           50     40          a
  4   0.52     0.12   0.40           80     40          b
  5   0.80     0.20   0.60          120     60          b
  6   1.10     0.10   1.00          300    100          b
  7   1.60     0.40   1.20          400    120          b
  8   2.40     0.40   2.00          250    200          b
  9   3.90     0.90   3.00          350    300          b
  sums 11.47          9.15         2000    915

No latency lies within 2 % of the objectives used (2.0 and 0.5), so the sketch cannot misplace any.
"""

from __future__ import annotations

import numpy as np
import pytest

from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import DIMENSION_KIND_EFFICIENCY
from metric_services.efficiency import FAMILY
from tests.factories import prediction

ACCEPT = 1_700_000_000
LATENCY = [0.12, 0.25, 0.31, 0.47, 0.52, 0.80, 1.10, 1.60, 2.40, 3.90]
TTFT = [0.02, 0.05, 0.06, 0.07, 0.12, 0.20, 0.10, 0.40, 0.40, 0.90]
PROMPT = [100, 200, 150, 50, 80, 120, 300, 400, 250, 350]
COMPLETION = [10, 20, 25, 40, 40, 60, 100, 120, 200, 300]


def settings(**overrides):
    return load_settings(redis_url="unix:///nowhere", **overrides)


def envelope(predictions, *, sequence=1, accept_s=ACCEPT):
    env = BatchEnvelope(model="m", sequence=sequence, predictions=predictions)
    env.accept_time.FromSeconds(accept_s)
    return env


def timed(pid, latency=None, ttft=None, prompt=None, completion=None, *, scenario="a", produced_at_s=None):
    p = prediction(pid, scenario=scenario, latency_s=latency, ttft_s=ttft, produced_at_s=produced_at_s)
    if prompt is not None:
        p.timing.prompt_tokens = prompt
    if completion is not None:
        p.timing.completion_tokens = completion
    return p


def fixture_predictions():
    return [
        timed(f"p{i}", LATENCY[i], TTFT[i], PROMPT[i], COMPLETION[i],
              scenario="a" if i < 4 else "b", produced_at_s=ACCEPT - 100 + 2 * i)
        for i in range(10)
    ]  # fmt: skip


def fold(*envelopes, settings_=None, model="m", family=FAMILY):
    s = settings_ or settings()
    merged = Stats()
    for env in envelopes:
        for minute_stats in family.compute(env, s).values():
            merged.merge(minute_stats)
    return family.fold(Folded.from_stats(merged), model, s)


def by_name(metrics):
    out = {m.name: m for m in metrics}
    assert len(out) == len(metrics), "metric names repeat"
    return out


@pytest.fixture(scope="module")
def folded():
    return fold(envelope(fixture_predictions()))


def test_compute_buckets_by_produced_minute():
    out = FAMILY.compute(envelope(fixture_predictions()), settings())
    # produced at ACCEPT-100 .. ACCEPT-82: 1_699_999_900 .. 1_699_999_918, all in minute 28_333_331
    # (28_333_331 * 60 = 1_699_999_860, next minute starts at 1_699_999_920).
    assert sorted(out) == [28_333_331]
    st = out[28_333_331]
    assert st.ints["n"] == 10
    assert st.ints["lat|n"] == 10
    assert st.ints["a|lat|n"] == 4
    assert st.ints["b|lat|n"] == 6
    assert st.mins["t|min"] == pytest.approx(ACCEPT - 100, abs=1e-6)
    assert st.maxes["t|max"] == pytest.approx(ACCEPT - 82, abs=1e-6)


def test_counts_and_latency_mean(folded):
    m = by_name(folded.report.metrics)
    assert folded.report.count == 10
    assert folded.report.skipped == 0
    assert folded.report.skipped_reason == ""
    # mean latency = 11.47 / 10 = 1.147 s.
    assert m["latency_mean"].value == pytest.approx(1.147, rel=1e-12)
    assert m["latency_mean"].count == 10
    assert m["latency_mean"].unit == "s"
    assert m["latency_mean"].lower_is_better
    # mean ttft = (0.02+0.05+0.06+0.07+0.12+0.2+0.1+0.4+0.4+0.9) / 10 = 2.32 / 10 = 0.232 s.
    assert m["time_to_first_token_mean"].value == pytest.approx(0.232, rel=1e-12)
    assert m["time_to_first_token_mean"].count == 10


def test_latency_percentiles_within_one_percent_of_lower_order_statistic(folded):
    m = by_name(folded.report.metrics)
    # numpy "lower" at rank q*(n-1), n = 10: p50 rank 4.5 -> sorted[4] = 0.52;
    # p90 rank 8.1 -> sorted[8] = 2.4; p99 rank 8.91 -> sorted[8] = 2.4.
    hand = {"latency_p50": 0.52, "latency_p90": 2.4, "latency_p99": 2.4}
    for name, q in (("latency_p50", 0.5), ("latency_p90", 0.9), ("latency_p99", 0.99)):
        exact = float(np.quantile(LATENCY, q, method="lower"))
        assert exact == hand[name]
        assert m[name].value == pytest.approx(exact, rel=0.01)
        assert m[name].count == 10
    # ttft sorted: 0.02 0.05 0.06 0.07 0.10 0.12 0.20 0.40 0.40 0.90 -> p50 0.10, p90 0.40, p99 0.40.
    assert m["time_to_first_token_p50"].value == pytest.approx(0.10, rel=0.01)
    assert m["time_to_first_token_p90"].value == pytest.approx(0.40, rel=0.01)
    assert m["time_to_first_token_p99"].value == pytest.approx(0.40, rel=0.01)


def test_percentile_interval_is_order_statistic_ranks(folded):
    p50 = by_name(folded.report.metrics)["latency_p50"]
    # half = 1.96 sqrt(10 * 0.25) = 3.099; quantiles (5 -/+ 3.099)/10 = 0.190, 0.810;
    # ranks 0.190 * 9 = 1.71 -> sorted[1] = 0.25 and 0.810 * 9 = 7.29 -> sorted[7] = 1.6.
    assert p50.interval.method == "order-statistic"
    assert p50.interval.lower == pytest.approx(0.25, rel=0.01)
    assert p50.interval.upper == pytest.approx(1.6, rel=0.01)


def test_percentiles_on_a_larger_sample_match_numpy_lower():
    rng = np.random.default_rng(20240611)
    values = [round(float(v), 6) for v in rng.lognormal(mean=-0.5, sigma=0.9, size=1000)]
    preds = [timed(f"p{i}", v) for i, v in enumerate(values)]
    m = by_name(fold(envelope(preds)).report.metrics)
    for name, q in (("latency_p50", 0.5), ("latency_p90", 0.9), ("latency_p99", 0.99)):
        assert m[name].value == pytest.approx(float(np.quantile(values, q, method="lower")), rel=0.01), name
    assert m["latency_mean"].value == pytest.approx(sum(values) / 1000, rel=1e-12)


def test_within_latency_objective_default(folded):
    m = by_name(folded.report.metrics)
    # default objective 2.0 s: 0.12 .. 1.6 are within (8), 2.4 and 3.9 are not -> 8/10.
    assert m["within_latency_objective"].value == 0.8
    assert m["within_latency_objective"].count == 10
    assert m["latency_objective"].value == 2.0
    (dim,) = folded.dimensions
    assert dim.kind == DIMENSION_KIND_EFFICIENCY
    assert dim.score == 0.8
    assert dim.count == 10
    assert dim.interval.method == "wilson"
    # Wilson(8, 10): p = 0.8, denom = 1 + z^2/10 = 1.38414588; centre = (0.8 + z^2/20)/denom = 0.716..;
    # half = z sqrt(0.016 + z^2/400)/denom -> [0.4901624, 0.9433178].
    assert (dim.interval.lower, dim.interval.upper) == pytest.approx((0.4901624, 0.9433178), abs=1e-6)
    assert {m.name for m in dim.metrics} == {
        "latency_mean", "latency_p50", "latency_p90", "latency_p99", "within_latency_objective", "latency_objective",
    }  # fmt: skip


def test_per_model_latency_objective():
    fam = FAMILY.configured(latency_objectives={"m": 0.5})
    f = fold(envelope(fixture_predictions()), family=fam, model="m")
    # objective 0.5 s: 0.12, 0.25, 0.31, 0.47 within (0.47 is 6 % below), 0.52 is 4 % above -> 4/10.
    m = by_name(f.report.metrics)
    assert m["within_latency_objective"].value == 0.4
    assert m["latency_objective"].value == 0.5
    assert f.dimensions[0].score == 0.4
    assert fam.signature("m", settings()).options["latency_objective_s"] == "0.5"
    # another model keeps the default 2.0 s -> 8/10.
    other = fold(envelope(fixture_predictions()), family=fam, model="other")
    assert other.dimensions[0].score == 0.8
    assert fam.signature("other", settings()).options["latency_objective_s"] == "2.0"


def test_tokens_totals_and_means(folded):
    m = by_name(folded.report.metrics)
    # prompt: 100+200+150+50+80+120+300+400+250+350 = 2000 -> mean 200.
    assert m["prompt_tokens_total"].value == 2000
    assert m["prompt_tokens_mean"].value == pytest.approx(200.0, rel=1e-12)
    assert m["prompt_tokens_mean"].count == 10
    # completion: 10+20+25+40+40+60+100+120+200+300 = 915 -> mean 91.5.
    assert m["completion_tokens_total"].value == 915
    assert m["completion_tokens_mean"].value == pytest.approx(91.5, rel=1e-12)
    assert m["completion_tokens_total"].unit == "tokens"


def test_output_tokens_per_second(folded):
    # sum completion 915 / sum (latency - ttft) 9.15 s = 100 tokens/s.
    rate = by_name(folded.report.metrics)["output_tokens_per_second"]
    assert rate.value == pytest.approx(100.0, rel=1e-9)
    assert rate.unit == "tokens/s"


def test_output_tokens_per_second_counts_the_whole_latency_without_ttft():
    # Two extra predictions: x: latency 1.0, no ttft, 50 completion tokens (a non-streamed reply:
    # generation time is its whole latency); y: ttft 0.3 but no latency, 70 tokens (no time: left out).
    # (915 + 50) / (9.15 + 1.0) = 965 / 10.15 tokens/s. Completion totals count every token count: 1035.
    preds = [*fixture_predictions(), timed("x", latency=1.0, completion=50), timed("y", ttft=0.3, completion=70)]
    m = by_name(fold(envelope(preds)).report.metrics)
    assert m["completion_tokens_total"].value == 1035
    assert m["output_tokens_per_second"].value == pytest.approx(965 / 10.15, rel=1e-9)


def test_throughput(folded):
    # 10 predictions produced from ACCEPT-100 to ACCEPT-82: (10 - 1) / 18 s = 0.5 per second.
    tp = by_name(folded.report.metrics)["throughput"]
    assert tp.value == pytest.approx(0.5, rel=1e-9)
    assert tp.count == 10
    assert tp.unit == "predictions/s"


def test_no_throughput_without_a_time_span():
    # both fall back to the accept time: span 0 -> no throughput; a single prediction -> none either.
    two = fold(envelope([timed("p1", 0.5), timed("p2", 0.7)]))
    assert "throughput" not in by_name(two.report.metrics)
    one = fold(envelope([timed("p1", 0.5, produced_at_s=ACCEPT - 5)]))
    assert "throughput" not in by_name(one.report.metrics)


def test_prediction_without_timing_is_skipped():
    preds = [*fixture_predictions(), prediction("untimed", produced_at_s=ACCEPT - 100 + 36)]
    f = fold(envelope(preds))
    assert f.report.count == 11
    assert f.report.skipped == 1
    assert f.report.skipped_reason == "no timing"
    m = by_name(f.report.metrics)
    # latencies unchanged: still 10 values, share 8/10.
    assert m["latency_mean"].count == 10
    assert m["within_latency_objective"].value == 0.8
    # but it counts for throughput: 11 predictions over 36 s -> 10/36.
    assert m["throughput"].value == pytest.approx(10 / 36, rel=1e-9)


def test_dimension_absent_without_latency():
    # timing present but no latency (only ttft or tokens), and one without timing at all.
    preds = [timed("p1", ttft=0.2), timed("p2", prompt=10, completion=5), prediction("p3")]
    f = fold(envelope(preds))
    (dim,) = f.dimensions
    assert dim.kind == DIMENSION_KIND_EFFICIENCY
    assert not dim.HasField("score")
    assert dim.absent_reason == "no predictions with timing.latency in this window"
    m = by_name(f.report.metrics)
    assert "within_latency_objective" not in m
    assert "latency_mean" not in m
    assert m["time_to_first_token_mean"].value == pytest.approx(0.2, rel=1e-12)
    assert f.report.skipped == 1
    # no latency: no sketch per scenario; HELM's cell has p2's token counts alone (no inference_runtime)
    assert {m.name: m.value for m in f.scenarios["a"].metrics} == {
        "num_prompt_tokens": 10.0,
        "num_completion_tokens": 5.0,
        "num_output_tokens": 5.0,
    }


def test_zero_latency_lands_in_the_zero_bin():
    # latencies 0, 0, 1.0, 1.0 (sorted). p50 rank 0.5*3 = 1.5 -> sorted[1] = 0 (a zero, read from the
    # zero count); p99 rank 2.97 -> sorted[2] = 1.0. Objective 0.5 -> the two zeros are within: 2/4.
    preds = [timed("p1", 0.0), timed("p2", 0.0), timed("p3", 1.0), timed("p4", 1.0)]
    f = fold(envelope(preds), family=FAMILY.configured(latency_objective_s=0.5))
    m = by_name(f.report.metrics)
    assert m["latency_p50"].value == 0.0
    assert m["latency_p99"].value == pytest.approx(1.0, rel=0.01)
    assert m["within_latency_objective"].value == 0.5
    assert m["latency_mean"].value == pytest.approx(0.5, rel=1e-12)


def test_per_scenario_parts(folded):
    assert set(folded.scenarios) == {"a", "b"}
    a = by_name(folded.scenarios["a"].metrics)
    b = by_name(folded.scenarios["b"].metrics)
    assert folded.scenarios["a"].count == 4
    assert folded.scenarios["b"].count == 6
    # a: (0.12 + 0.25 + 0.31 + 0.47) / 4 = 1.15 / 4 = 0.2875, all 4 within 2.0 s.
    assert a["latency_mean"].value == pytest.approx(0.2875, rel=1e-12)
    assert a["within_latency_objective"].value == 1.0
    # b: (0.52 + 0.8 + 1.1 + 1.6 + 2.4 + 3.9) / 6 = 10.32 / 6 = 1.72; 4 of 6 within 2.0 s.
    assert b["latency_mean"].value == pytest.approx(1.72, rel=1e-12)
    assert b["within_latency_objective"].value == pytest.approx(4 / 6, abs=1e-15)
    # b sorted 0.52 0.8 1.1 1.6 2.4 3.9: p50 rank 2.5 -> 1.1.
    assert b["latency_p50"].value == pytest.approx(1.1, rel=0.01)


# --- merge invariance ---------------------------------------------------------------------------


def flatten(f):
    out = {"report": (f.report.count, f.report.skipped, f.report.skipped_reason)}
    for m in f.report.metrics:
        out["report/" + m.name] = (m.value, m.count, m.interval.lower, m.interval.upper)
    for scn, part in f.scenarios.items():
        for m in part.metrics:
            out[f"{scn}/{m.name}"] = (m.value, m.count, m.interval.lower, m.interval.upper)
    (dim,) = f.dimensions
    out["dim"] = (dim.score, dim.count, dim.interval.lower, dim.interval.upper, dim.absent_reason)
    return out


def assert_same_fold(a, b):
    fa, fb = flatten(a), flatten(b)
    assert fa.keys() == fb.keys()
    for key, va in fa.items():
        for x, y in zip(va, fb[key], strict=True):
            if isinstance(x, float):
                assert y == pytest.approx(x, rel=1e-12, abs=1e-12), key
            else:
                assert x == y, key


def test_splitting_the_batch_gives_the_same_fold():
    preds = [*fixture_predictions(), prediction("untimed", produced_at_s=ACCEPT - 30)]
    whole = fold(envelope(preds))
    first = envelope(preds[::3], sequence=1)
    second = envelope(preds[1::3], sequence=2, accept_s=ACCEPT + 5)
    third = envelope(preds[2::3], sequence=3, accept_s=ACCEPT + 70)
    assert_same_fold(whole, fold(first, second, third))
    assert_same_fold(whole, fold(third, first, second))
    assert_same_fold(whole, fold(*(envelope([p], sequence=i + 1) for i, p in enumerate(preds))))


def test_helms_run_cell_per_scenario_over_unperturbed_requests():
    v = timed("p3~typos", 9.0, prompt=100, completion=100)
    v.perturbation.name, v.perturbation.original_id = "typos", "p1"
    v.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    preds = [timed("p1", 1.0, prompt=10, completion=4), timed("p2", 2.0), timed("p4", prompt=20, completion=0), v]
    m = {x.name: x for x in fold(envelope(preds)).scenarios["a"].metrics}
    # HELM's inference_runtime: (1 + 2) / 2 over the unperturbed with a latency; tokens (10 + 20) / 2, (4 + 0) / 2
    assert m["inference_runtime"].value == pytest.approx(1.5, rel=1e-12) and m["inference_runtime"].count == 2
    assert m["num_prompt_tokens"].value == 15.0 and m["num_prompt_tokens"].count == 2
    assert m["num_completion_tokens"].value == 2.0 and m["num_output_tokens"].value == 2.0
    # the family's own latency covers every request, the variant's 9 s too: (1 + 2 + 9) / 3
    assert m["latency_mean"].value == pytest.approx(4.0, rel=1e-12)
