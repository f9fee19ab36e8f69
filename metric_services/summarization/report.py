"""Folds merged summarization statistics into metrics, per scenario and for the family's report.

Means (ROUGE, fragment statistics, semantic similarity) carry a normal 95 % interval per scenario
and are macro-averaged over scenarios in the family report (as HELM's group cells average run
means), with propagated intervals. BLEU and chrF are corpus scores: per scenario over its
predictions, and in the family report over all summarization predictions of the window, with
the jackknife interval of corpus_scores.py. A scenario's accuracy candidate is its main metric
(rouge_2 unless HOLISTIC_MAIN_METRICS names rouge_1 or rouge_l), where a prediction carrying the
client's `correct` counts with that judgement instead, as in the accuracy family.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from holistic.families import ScenarioAccuracy
from holistic.stats.intervals import mean_var
from holistic.stats.metric_values import macro_mean, mean, plain, proportion, with_interval
from holistic.stats.names import Fields, key
from holistic.v1.profile_pb2 import Metric
from metric_services.shared import rouge
from metric_services.summarization import corpus_scores
from metric_services.summarization.scoring import CORPUS, FRAGMENT_STATS, split_corpus_bin

NAME = "summarization"
ROUGE_MAINS = {t: f"{t}_f" for t in rouge.TYPES}
SEMANTIC = {"sem_ref": "semantic_similarity_reference", "sem_src": "semantic_similarity_source"}


def _mean(name: str, f: Fields, prefix: str, n: float, clip: tuple[float, float]) -> Metric:
    return mean(name, NAME, n, f.num(prefix, "sum"), f.num(prefix, "sumsq"), clip=clip)


def scenario_means(f: Fields) -> list[tuple[Metric, float]]:
    """(metric, variance of its mean) for every mean-type metric the scenario has data for."""
    out: list[tuple[Metric, float]] = []

    def add(name: str, prefix: str, n: float) -> None:
        if n:
            m = _mean(name, f, prefix, n, bounds(name))
            out.append((m, mean_var(n, f.num(prefix, "sum"), f.num(prefix, "sumsq"))[1]))

    ref_n = f.num("ref", "n")
    for t in rouge.TYPES:
        add(t, key("ref", f"{t}_f"), ref_n)
        add(f"{t}_precision", key("ref", f"{t}_p"), ref_n)
        add(f"{t}_recall", key("ref", f"{t}_r"), ref_n)
    for name in FRAGMENT_STATS:
        add(name, key("src", name), f.num("src", "n"))
    for prefix, name in SEMANTIC.items():
        add(name, prefix, f.num(prefix, "n"))
    return out


def corpus_groups(f: Fields) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """BLEU and chrF statistics per jackknife group, from the corpus histogram's bins."""
    bleu: dict[int, list[float]] = defaultdict(lambda: [0.0] * corpus_scores.BLEU_WIDTH)
    chrf: dict[int, list[float]] = defaultdict(lambda: [0.0] * corpus_scores.CHRF_WIDTH)
    for bin_, v in f.scope(CORPUS).items():
        group, stat = split_corpus_bin(bin_)
        target = bleu if stat[0] == "b" else chrf
        target[group][int(stat[1:])] += v
    return dict(bleu), dict(chrf)


def corpus_metrics(bleu: dict[int, list[float]], chrf: dict[int, list[float]], n: float) -> list[Metric]:
    out = []
    for name, groups, score in (
        ("bleu", bleu, corpus_scores.bleu_from_stats),
        ("chrf", chrf, corpus_scores.chrf_from_stats),
    ):
        if groups:
            out.append(_corpus_metric(name, groups, score, n))
    return out


def _corpus_metric(
    name: str, groups: dict[int, list[float]], score: Callable[[Sequence[float]], float], n: float
) -> Metric:
    value, lo, hi = corpus_scores.jackknife(groups, score, (0.0, 100.0))
    return with_interval(plain(name, NAME, value, n), lo, hi, "jackknife")


def merge_groups(into: dict[int, list[float]], more: dict[int, list[float]]) -> None:
    for g, values in more.items():
        mine = into.setdefault(g, [0.0] * len(values))
        for k, v in enumerate(values):
            mine[k] += v


def scenario_accuracy(f: Fields, main: str, references_win: bool = False) -> ScenarioAccuracy | None:
    """Mean ROUGE F of the main type by the references, plus the client's judgements: those of
    predictions without references only, with HOLISTIC_REFERENCES_WIN (HELM), else all of them."""
    refs_part, judged_part = ("ref", "judged_norefs") if references_win else ("unjudged", "judged")
    ref_n = f.num(refs_part, "n")
    if main not in ROUGE_MAINS or not ref_n:
        return None  # another family's metric, or only judgements (the accuracy family reports those)
    judged_n, judged_sum = f.num(judged_part, "n"), f.num(judged_part, "sum")
    n = ref_n + judged_n
    s = f.num(refs_part, ROUGE_MAINS[main], "sum") + judged_sum
    ss = f.num(refs_part, ROUGE_MAINS[main], "sumsq") + judged_sum
    return ScenarioAccuracy(
        metric=mean("accuracy", NAME, n, s, ss, clip=(0.0, 1.0)),
        source=main,
        variance=mean_var(n, s, ss)[1],
        sources={"references": int(ref_n), "client": int(judged_n)},
    )


def macro(name: str, parts: list[tuple[Metric, float]]) -> Metric:
    """Unweighted mean over scenarios of their means; count is the predictions behind them."""
    return macro_mean(name, NAME, [(m.value, var, m.count, False) for m, var in parts], clip=bounds(name))


def bounds(name: str) -> tuple[float, float]:
    """The range a mean-type metric's values lie in, for clipping its interval."""
    if name.startswith("semantic_"):
        return (-1.0, 1.0)
    if name in ("density", "compression"):
        return (0.0, float("inf"))
    return (0.0, 1.0)


def truncation_metric(texts: float, truncated: float) -> Metric | None:
    if not texts:
        return None
    return proportion("semantic_truncated_share", NAME, truncated, texts, lower_is_better=True)
