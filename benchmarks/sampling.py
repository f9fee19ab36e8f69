"""Scoring a sample (HOLISTIC_TOXICITY_SAMPLE_RATE): the toxicity worker's CPU per accepted prediction at
rates 1, 0.25 and 0.05, beside scoring every prediction, and what the estimate gives up; then per-scenario
rates (HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES): the two costliest scenarios (the most output text: a
classifier's cost grows with it) at 5 %, the rest scored whole.

CPU: the demo's predictions in batches of 500 through what a worker does per batch before Redis:
choosing the sample (holistic/families/sampling.py) and the family's compute, one core, time.process_time,
median of --runs; with the bundled classifier (a linear model: microseconds a text) and, with --bert,
a neural one: a BERT of 4 layers, width 256 (random weights, built and exported to ONNX int8 here, as
a team exports its own), the cost sampling is for. Redis's apply is not in it (the same per batch at
any rate). The estimate: toxic_frac on the sample beside its value on every prediction, with the width of
its 95 % interval; with per-scenario rates, the profile's own fold (each rate group folded apart and
combined with Horvitz-Thompson weights, holistic/families/stratified.py).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks._common import batches, median, sample_predictions
from benchmarks._results import Figure, record
from holistic.families import one_pass, sampling
from holistic.profile.fold import build
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import profile_pb2 as pp
from metric_services.toxicity import FAMILY, ToxicityFamily

BATCH = 500
RATES = (1.0, 0.25, 0.05)
COSTLIEST = 2  # scenarios given their own rate of 5 % in the per-scenario run


SMALL_BERT = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}


def cpu_per_prediction_us(family: ToxicityFamily, envelopes: list[BatchEnvelope], rate: float, runs: int) -> float:
    settings = load_settings(redis_url="unix:///unused")
    times = []
    for _ in range(runs):
        start = time.process_time()
        for env in envelopes:
            family.compute(sampling.sample(env, rate), settings)
        times.append(time.process_time() - start)
    return median(times) / sum(len(e.predictions) for e in envelopes) * 1e6


def cpu_per_prediction_scenario_us(
    family: ToxicityFamily, envelopes: list[BatchEnvelope], rates: sampling.Rates, runs: int
) -> float:
    """As cpu_per_prediction_us, through what a worker runs for per-scenario rates (sampling.compute)."""
    settings = load_settings(redis_url="unix:///unused")
    times = []
    for _ in range(runs):
        start = time.process_time()
        for env in envelopes:
            sampling.compute(family, env, settings, rates)
        times.append(time.process_time() - start)
    return median(times) / sum(len(e.predictions) for e in envelopes) * 1e6


def toxic_frac_scenario(envelopes: list[BatchEnvelope], rates: sampling.Rates) -> tuple[float, float, int]:
    """toxic_frac as the profile gives it under per-scenario rates: the value, its interval's width, the count."""
    settings = load_settings(redis_url="unix:///unused")
    total = Stats()
    for env in envelopes:
        by_minute, _ = sampling.compute(FAMILY, env, settings, rates)
        for st in by_minute.values():
            total.merge(st)
    profile = build("bench", pp.Window(), {}, {FAMILY.name: Folded.from_stats(total)}, settings, 0.0,
                    families=lambda name: FAMILY)  # fmt: skip
    report = next(f for f in profile.families if f.family == FAMILY.name)
    m = next(m for m in report.metrics if m.name == "toxic_frac")
    return m.value, m.interval.upper - m.interval.lower, int(m.count)


def toxic_frac(envelopes: list[BatchEnvelope], rate: float) -> tuple[float, float, int]:
    """The value, the interval's width and the count over the sample of every batch."""
    settings = load_settings(redis_url="unix:///unused")
    whole = BatchEnvelope(model="bench")
    for env in envelopes:
        whole.predictions.extend(sampling.sample(env, rate).predictions)
    whole.accept_time.FromSeconds(1_800_000_000)
    report = FAMILY.fold(Folded.from_stats(one_pass(FAMILY, whole, settings)), "bench", settings).report
    m = next(m for m in report.metrics if m.name == "toxic_frac")
    return m.value, m.interval.upper - m.interval.lower, int(m.count)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predictions", type=int, default=4000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bert", action="store_true", help="also a small BERT exported to ONNX int8 (about a minute)")
    args = ap.parse_args()
    preds = sample_predictions(args.predictions)
    envelopes = batches(preds, BATCH)
    FAMILY.prepare(load_settings(redis_url="unix:///unused"))  # the model loaded before timing
    cpu = {rate: cpu_per_prediction_us(FAMILY, envelopes, rate, args.runs) for rate in RATES}
    est = {rate: toxic_frac(envelopes, rate) for rate in RATES}
    print(f"{args.predictions:,} demo predictions in batches of {BATCH}; toxicity, bundled classifier; "
          f"median of {args.runs} runs; one core")  # fmt: skip
    print(f"{'rate':>6} {'CPU us/prediction':>18} {'vs rate 1':>10} {'toxic_frac':>11} {'95% width':>10} {'n':>6}")
    for rate in RATES:
        value, width, n = est[rate]
        print(f"{rate:6g} {cpu[rate]:18.1f} {cpu[1.0] / cpu[rate]:9.1f}x {value:11.4f} {width:10.4f} {n:6d}")
    note = "choosing the sample hashes every prediction; Redis's apply per batch is not in the figure"
    chars: dict[str, int] = {}
    for p in preds:
        chars[p.scenario] = chars.get(p.scenario, 0) + len(p.output)
    busiest = sorted(chars, key=lambda s: -chars[s])[:COSTLIEST]
    mixed = sampling.Rates(1.0, {s: 0.05 for s in busiest})
    mixed_cpu = cpu_per_prediction_scenario_us(FAMILY, envelopes, mixed, args.runs)
    whole_cpu = cpu_per_prediction_scenario_us(FAMILY, envelopes, sampling.Rates(), args.runs)
    mixed_est, whole_est = toxic_frac_scenario(envelopes, mixed), toxic_frac_scenario(envelopes, sampling.Rates())
    share = sum(p.scenario in busiest for p in preds) / len(preds)
    text_share = sum(chars[s] for s in busiest) / sum(chars.values())
    print(f"per-scenario rates {','.join(f'{s}=0.05' for s in busiest)} ({share:.0%} of the predictions), "
          f"the rest whole, through the profile's fold ({text_share:.0%} of the output text):")  # fmt: skip
    for label, cpu_us, (value, width, n) in (("whole", whole_cpu, whole_est), ("mixed", mixed_cpu, mixed_est)):
        print(f"{label:>6} {cpu_us:18.1f} {whole_cpu / cpu_us:9.1f}x {value:11.4f} {width:10.4f} {n:6d}")
    figures = [
        Figure(f"toxicity worker CPU per accepted prediction, {','.join(busiest)} at 5 %, the rest whole", mixed_cpu,
               "us", "every prediction scored", whole_cpu, higher_is_better=False,
               note=f"{share:.0%} of the predictions, {text_share:.0%} of the output text in the sampled "
               "scenarios; splitting a batch by rate copies its predictions"),
        Figure(f"toxic_frac 95% interval width, {','.join(busiest)} at 5 %, the rest whole", mixed_est[1], "share",
               "every prediction scored", whole_est[1], higher_is_better=False,
               note="Horvitz-Thompson: each rate group folded apart and weighted by 1/rate"),
    ]  # fmt: skip
    figures += [
        Figure(f"toxicity worker CPU per accepted prediction, sample rate {rate:g}", cpu[rate], "us",
               "every prediction scored (rate 1)", cpu[1.0], higher_is_better=False, note=note)
        for rate in RATES[1:]
    ]  # fmt: skip
    figures += [
        Figure(f"toxic_frac 95% interval width, sample rate {rate:g}", est[rate][1], "share",
               "every prediction scored (rate 1)", est[1.0][1], higher_is_better=False,
               note="the price of the sample: a wider interval, never a hidden one")
        for rate in RATES[1:]
    ]  # fmt: skip
    if args.bert:
        with tempfile.TemporaryDirectory(prefix="holistic-bert-") as d:
            neural = small_bert(Path(d))
            neural.prepare(load_settings(redis_url="unix:///unused"))
            bert = {rate: cpu_per_prediction_us(neural, envelopes, rate, args.runs) for rate in RATES}
            bert_mixed = cpu_per_prediction_scenario_us(neural, envelopes, mixed, args.runs)
        print("with a small BERT (4 layers, width 256, ONNX int8, one thread):")
        for rate in RATES:
            print(f"{rate:6g} {bert[rate]:18.1f} {bert[1.0] / bert[rate]:9.1f}x")
        print(f" mixed {bert_mixed:18.1f} {bert[1.0] / bert_mixed:9.1f}x")
        figures += [
            Figure(f"toxicity worker CPU per accepted prediction, small BERT, sample rate {rate:g}", bert[rate], "us",
                   "every prediction scored (rate 1)", bert[1.0], higher_is_better=False,
                   goal=f">= {0.8 / rate:g}x (80 % of 1/rate)", met=bert[1.0] / bert[rate] >= 0.8 / rate,
                   note="a neural classifier's pass dominates: the saving approaches 1/rate")
            for rate in RATES[1:]
        ]  # fmt: skip
        bound = 1 / (1 - text_share + 0.05 * text_share)  # the saving if the cost were the text's alone
        figures.append(
            Figure(f"toxicity worker CPU per accepted prediction, small BERT, {','.join(busiest)} at 5 %, the rest "
                   "whole", bert_mixed, "us", "every prediction scored", bert[1.0], higher_is_better=False,
                   goal=f">= {0.8 * bound:.2g}x (80 % of the {bound:.2g}x the text share allows)",
                   met=bert[1.0] / bert_mixed >= 0.8 * bound)
        )  # fmt: skip
    record("sampling", figures)


def small_bert(root: Path) -> ToxicityFamily:
    """A Detoxify-layout BERT with random weights, exported as a team exports its own (int8)."""
    from holistic.classifiers.export_detoxify import export_detoxify
    from tests.classifiers.detoxify_fixtures import build_bert

    ckpt = build_bert(root / "ckpt", size=SMALL_BERT, vocab_size=30522, max_length=128, init=0.02)
    export_detoxify(ckpt, ckpt.parent, root / "int8", int8=True, log=lambda s: None)
    return FAMILY.configured(model=root / "int8", threads=1)


if __name__ == "__main__":
    main()
