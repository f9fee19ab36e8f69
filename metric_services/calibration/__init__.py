"""Calibration family: HELM's ece_10_bin and friends, per scenario, from mergeable histograms.

Input per unperturbed prediction: p = `confidence`, else the probability of the choice equal to the
(stripped) output, else the highest choice probability; y = the client's `correct`, else HELM's
strict exact_match over the references. HELM computes calibration per perturbation context and
shows the unperturbed one, so perturbed rows are skipped; summarization rows are skipped unless
the client judged them (HELM has no calibration for them).

State per (scenario, time bucket): exact moments (n, sum y, sum p, sum p^2, sum p*y: accuracy, mean
confidence, ece_1_bin, Brier), plus
- the exact histogram: distinct confidence (its repr) -> count, and -> correct count; capped at
  EXACT_CAP distinct values per bucket, past which it turns "over" for good (stats.py);
- the grid: GRID cells ((k-1)/GRID, k/GRID] -> count, correct count and sum of confidences.
A window whose buckets are all exact gets HELM's numbers exactly; otherwise the grid gives them,
with `ece_10_bin_error_bound` (and bounds for the selective metrics) reported beside: only the
cells in which an equal-mass chunk boundary falls can be split differently than HELM splits them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import NamedTuple

from holistic.families import Axis, FamilyBase, FamilyFold, MetricMetadata, ScenarioPart, prediction_minute
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.intervals import Z95, normal
from holistic.stats.mergeable import OVER, Folded, Stats
from holistic.stats.metric_values import plain, proportion, with_interval
from holistic.stats.names import Fields, key
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import (
    DIMENSION_KIND_CALIBRATION,
    Dimension,
    FamilyReport,
    Metric,
    MetricSignature,
    ReliabilityBin,
    ReliabilityCurve,
)
from metric_services.calibration.metrics import (
    Points,
    ece_equal_mass,
    ece_equal_width,
    platt_fit,
    recalibrated,
    selective,
)
from metric_services.shared.reference_metrics import exact_match

NAME = "calibration"
VERSION = "1"
EXACT_CAP = 2048
GRID = 2000
SKIP = "skip:"  # "<scenario>|skip:<reason>": rows left out, by reason
MIN_SAMPLES = 300  # HELM: ece_10_bin "is unreliable below about 300 examples"
SKIPS = {
    "perturbed": "perturbed variants (HELM shows the unperturbed context)",
    "no_confidence": "no confidence or choice probabilities",
    "no_label": "no references and no client judgement",
    "summarization": "summarization without a client judgement (HELM has no calibration for it)",
}


def confidence_of(p: pb.Prediction) -> float | None:
    if p.HasField("confidence"):
        return p.confidence + 0.0  # -0.0 -> 0.0: one key per value
    if not p.choice_probabilities:
        return None
    out = p.output.strip()
    for cp in p.choice_probabilities:
        if cp.choice.strip() == out:
            return cp.probability + 0.0
    return max(cp.probability for cp in p.choice_probabilities) + 0.0


def label_of(p: pb.Prediction, references_win: bool = False) -> int | None:
    """y: the client's `correct`, else HELM's exact_match; references first with HOLISTIC_REFERENCES_WIN."""
    if p.HasField("correct") and not (references_win and p.references):
        return 1 if p.correct else 0
    if not p.references:
        return None
    return 1 if any(exact_match(ref, p.output) for ref in p.references) else 0


def cell_of(p: float) -> int:
    return math.ceil(p * GRID)


def _skip_reason(p: pb.Prediction, references_win: bool) -> str | None:
    if p.HasField("perturbation"):
        return "perturbed"
    judged = p.HasField("correct") and not (references_win and p.references)
    if p.task == pb.TASK_SUMMARIZATION and not judged:
        return "summarization"
    return None


def calibration_point(p: pb.Prediction, references_win: bool) -> tuple[float, int] | str:
    """(p, y) of a prediction that counts, else why it is skipped (a SKIPS key)."""
    reason = _skip_reason(p, references_win)
    if reason is not None:
        return reason
    conf = confidence_of(p)
    if conf is None:
        return "no_confidence"
    label = label_of(p, references_win)
    return "no_label" if label is None else (conf, label)


class _Fields(NamedTuple):
    """A scenario's statistics fields (counts, sums, histograms): see compute."""

    rows: str
    n: str
    y: str
    p: str
    pp: str
    py: str
    xn: str
    gn: str
    gp: str
    xy: str
    gy: str


def _fields(scn: str) -> _Fields:
    return _Fields(*(key(scn, part) for part in _Fields._fields))


class CalibrationFamily(FamilyBase):
    name = NAME
    exported_metrics = ("ece_10_bin",)  # holistic quality-exporter's default series
    version = VERSION
    axis = Axis("calibration", "1 - ece_10_bin, averaged over scenarios.", kind=DIMENSION_KIND_CALIBRATION, order=2)
    metrics = (
        MetricMetadata(
            "ece_10_bin*",
            "ECE (10 equal-mass bins)",
            "HELM's expected calibration error, top label, plug-in.",
            lower_is_better=True,
        ),
        MetricMetadata("ece_1_bin", "ECE (1 bin)", "|mean confidence - accuracy|.", lower_is_better=True),
        MetricMetadata(
            "ece_equal_width_10_bin", "ECE (10 equal-width bins)", "Expected calibration error.", lower_is_better=True
        ),
        MetricMetadata("brier_score", "Brier score", "Mean squared error of the confidence.", lower_is_better=True),
        MetricMetadata(
            "selective_cov_acc_area*", "Selective coverage-accuracy area", "HELM's selective classification area."
        ),
        MetricMetadata(
            "selective_acc@10*", "Selective accuracy at 10 %", "Accuracy of the 10 % most confident predictions."
        ),
        MetricMetadata(
            "calibration_accuracy", "Accuracy (calibration label)", "Share of predictions whose label is correct."
        ),
        MetricMetadata("max_prob", "Mean confidence", "Mean of the predictions' confidence."),
        MetricMetadata("platt_*", "Platt scaling", "HELM's Platt-scaled calibration (coefficients and ECE after it)."),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        accept_s = envelope.accept_time.seconds
        out: dict[int, Stats] = defaultdict(Stats)
        names: dict[str, _Fields] = {}  # a scenario's field names: made once a batch, not ~11 a row
        for p in envelope.predictions:
            at = p.produced_at
            st = out[prediction_minute(at.seconds, at.nanos, accept_s)]
            scn = p.scenario
            f = names.get(scn)
            if f is None:
                f = names[scn] = _fields(scn)
            st.incr(f.rows)
            point = calibration_point(p, settings.references_win)
            if isinstance(point, str):
                st.incr(key(scn, SKIP + point))
                continue
            conf, label = point
            st.incr(f.n)
            st.incr(f.y, label)
            st.add(f.p, conf)
            st.add(f.pp, conf * conf)
            st.add(f.py, conf * label)
            exact, cell = repr(conf), str(cell_of(conf))
            st.bump(f.xn, exact, 1, cap=EXACT_CAP)
            st.bump(f.gn, cell)
            st.bump(f.gp, cell, conf)
            if label:
                st.bump(f.xy, exact, 1, cap=EXACT_CAP)
                st.bump(f.gy, cell)
        return dict(out)

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """The prediction's Brier term (p - y)², whose mean over the scenario is brier_score; ECE and the
        selective metrics are over binned predictions, no one prediction has them. None for a skipped one:
        without a confidence or a label there is nothing to calibrate (not a failed evaluation)."""
        point = calibration_point(p, settings.references_win)
        if isinstance(point, str):
            return []
        conf, label = point
        return [Score("brier_score", (conf - label) ** 2)]

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        by_scn = stats.groups()
        report = FamilyReport(family=NAME)
        parts: dict[str, ScenarioPart] = {}
        eces: list[tuple[str, float, float, float]] = []
        skipped: dict[str, int] = defaultdict(int)
        for scn in sorted(by_scn):
            f = by_scn[scn]
            report.count += int(f.get("rows", 0))
            for reason in SKIPS:
                skipped[reason] += int(f.num(SKIP + reason))
            if not f.get("n"):
                continue
            metrics, curve, ece, bound = _scenario_metrics(scn, f)
            parts[scn] = ScenarioPart(metrics=metrics, count=int(f["n"]))
            report.reliability_curves.append(curve)
            eces.append((scn, ece, bound, f["n"]))
        report.skipped = sum(skipped.values())
        report.skipped_reason = "; ".join(f"{n} {SKIPS[r]}" for r, n in skipped.items() if n)
        dim = Dimension(
            kind=DIMENSION_KIND_CALIBRATION,
            definition="1 - ece_10_bin (HELM: equal-mass bins, top-label, plug-in), averaged over scenarios; "
            f"marked low-confidence when a scenario has fewer than {MIN_SAMPLES} predictions with a confidence.",
        )
        if not eces:
            dim.absent_reason = "no predictions with a confidence and a label (references or correct) in this window"
        else:
            mean_ece = sum(e for _, e, _, _ in eces) / len(eces)
            dim.score = 1 - mean_ece
            dim.count = int(sum(n for *_, n in eces))
            dim.low_confidence = any(n < MIN_SAMPLES for *_, n in eces)
            dim.metrics.append(plain("ece_10_bin", NAME, mean_ece, dim.count, lower_is_better=True))
            bound = sum(b for _, _, b, _ in eces) / len(eces)
            dim.metrics.append(plain("ece_10_bin_error_bound", NAME, bound, dim.count, lower_is_better=True))
            for scn, e, _, n in eces:
                dim.metrics.append(plain(f"ece_10_bin[{scn}]", NAME, e, n, lower_is_better=True))
            report.metrics.extend(dim.metrics[:2])
        return FamilyFold(report=report, scenarios=parts, dimensions=[dim])

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        options = {
            "ece": "equal-mass-10,top-label,plugin",
            "label": "exact_match|correct" if settings.references_win else "correct|exact_match",
            "exact_cap": str(EXACT_CAP),
            "grid": str(GRID),
            "ties": "expected-over-orders",
        }
        return make_signature(NAME, VERSION, options)


def points_of(f: Fields) -> Points:
    """Exact points when every bucket kept its exact histogram, else the grid cells."""
    if key("xn", OVER) not in f and key("xy", OVER) not in f:
        counts = {float(k): v for k, v in f.scope("xn").items()}  # repr(p): one key per value
        correct = {float(k): v for k, v in f.scope("xy").items()}
        return Points.exact(counts, correct)
    cells = {int(k): v for k, v in f.scope("gn").items()}
    correct_cells = {int(k): v for k, v in f.scope("gy").items()}
    sums = {int(k): v for k, v in f.scope("gp").items()}
    return Points.grid(cells, correct_cells, sums, GRID)


def _scenario_metrics(scn: str, f: Fields) -> tuple[list[Metric], ReliabilityCurve, float, float]:
    n, y, sp, spp, spy = f["n"], f.get("y", 0.0), f.get("p", 0.0), f.get("pp", 0.0), f.get("py", 0.0)
    pts = points_of(f)
    exact = pts.lo is None
    em = ece_equal_mass(pts)
    sel = selective(pts)
    out = [
        plain("ece_10_bin", NAME, em.ece, n, lower_is_better=True),
        plain("ece_10_bin_error_bound", NAME, em.error_bound, n, lower_is_better=True),
        plain("ece_1_bin", NAME, abs(sp / n - y / n), n, lower_is_better=True),
        plain("ece_equal_width_10_bin", NAME, ece_equal_width(pts), n, lower_is_better=True),
        plain("brier_score", NAME, (spp - 2 * spy + y) / n, n, lower_is_better=True),
        plain("selective_cov_acc_area", NAME, sel.area, n),
        plain("selective_acc@10", NAME, sel.acc_at_10, n),
        proportion("calibration_accuracy", NAME, y, n),
    ]
    max_prob = plain("max_prob", NAME, sp / n, n)
    lo, hi = normal(n, sp, spp, Z95)
    out.append(with_interval(max_prob, max(lo, 0.0), min(hi, 1.0), "normal"))
    if not exact:
        out.append(plain("selective_cov_acc_area_error_bound", NAME, sel.area_bound, n))
        out.append(plain("selective_acc@10_error_bound", NAME, sel.acc_bound, n))
    if 0 < y < n:
        coef, intercept = platt_fit(pts)
        cal = recalibrated(pts, coef, intercept)
        out += [
            plain("platt_coef", NAME, coef, n),
            plain("platt_intercept", NAME, intercept, n),
            plain("platt_ece_10_bin", NAME, ece_equal_mass(cal).ece, n, lower_is_better=True),
            plain("platt_ece_1_bin", NAME, abs(float(cal.s.sum()) / n - y / n), n, lower_is_better=True),
        ]
    else:  # HELM: all labels equal, no fit, both recalibrated ECEs 0
        out += [plain("platt_ece_10_bin", NAME, 0.0, n), plain("platt_ece_1_bin", NAME, 0.0, n)]
    curve = ReliabilityCurve(scenario=scn, binning="equal_mass", exact=exact)
    for lower, upper, count, sum_p, sum_y in em.bins:
        curve.bins.append(
            ReliabilityBin(
                lower=lower, upper=upper, count=int(count), mean_confidence=sum_p / count, accuracy=sum_y / count
            )
        )
    return out, curve, em.ece, em.error_bound


FAMILY = CalibrationFamily()
