"""Field-by-field validation of a SubmitPredictionsRequest, with google.rpc field paths.

Everything is checked before anything is written, so a batch is accepted whole or not at all;
the client CLI uses the field paths (predictions[3].confidence) to report file lines.
"""

from __future__ import annotations

from gateway.evaluation_validation import check_evaluations, evaluation_only
from gateway.ranking_validation import check_ranking, judgments_only
from gateway.request_rules import BATCH_ID_RE, BATCH_ID_RULE, NAME_RE, NAME_RULE, RULES, TAG_RE, TAG_RULE
from holistic.errors import FieldViolation, InvalidArgument
from holistic.settings import Settings
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest

__all__ = ["BATCH_ID_RE", "NAME_RE", "NAME_RULE", "TAG_RE", "TAG_RULE", "validate"]

MAX_ID_CHARS = RULES.id_chars
MAX_VIOLATIONS = 100
PROBABILITY_SUM_TOLERANCE = RULES.probability_sum_tolerance
MIN_PRODUCED_AT_S = RULES.min_produced_at_s
MAX_DURATION_S = RULES.max_duration_s
KNOWN_TASKS = frozenset(pb.Task.values()) - {pb.TASK_UNSPECIFIED}
KNOWN_PERTURBATION_FAMILIES = frozenset(pb.PerturbationFamily.values()) - {pb.PERTURBATION_FAMILY_UNSPECIFIED}


class Violations(list[FieldViolation]):
    def add(self, field: str, description: str) -> None:
        if len(self) < MAX_VIOLATIONS:
            self.append(FieldViolation(field, description))


def _too_long(text: str, limit: int) -> bool:
    n = len(text)
    return n > limit or (n * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit)


def validate(request: SubmitPredictionsRequest, limits: Settings, now_s: float, size: int | None = None) -> str:
    """Return the batch's model, or raise InvalidArgument listing every bad field.

    This runs for every prediction on the gateway's hot path, so it touches each field once and
    skips what cannot fail: no text can exceed max_text_bytes when the whole request (`size`
    bytes) does not, and an unset confidence reads as 0.0, which is valid.
    """
    v = Violations()
    if not request.batch_id:
        v.add("batch_id", "is required (a client-chosen idempotency key)")
    elif not BATCH_ID_RE.fullmatch(request.batch_id):
        v.add("batch_id", f"must be {BATCH_ID_RULE}")
    model = request.model
    if model and not NAME_RE.fullmatch(model):
        v.add("model", f"must be {NAME_RULE}")
        model = ""
    preds = request.predictions
    if not preds:
        v.add("predictions", "must not be empty")
    elif len(preds) > limits.max_batch_predictions:
        v.add("predictions", f"has {len(preds)} predictions; at most {limits.max_batch_predictions} per batch")
        raise InvalidArgument(list(v))

    max_text = limits.max_text_bytes
    check_text = size is None or size > max_text
    max_refs = limits.max_references
    max_map = limits.max_map_entries
    latest_s = now_s + limits.future_skew_s
    ids: set[str] = set()
    good_names: set[str] = set()
    good_tags: set[tuple[str, str]] = set()
    only_evaluations: list[int] = []  # indices of the evaluation-only predictions
    for i, p in enumerate(preds):
        pid = p.id
        if p.task == pb.TASK_RANKING and judgments_only(p):  # may follow its ranking, even in one batch
            if not pid or len(pid) > MAX_ID_CHARS:
                _bad_id(v, f"predictions[{i}].id", pid)
        else:
            if not pid or len(pid) > MAX_ID_CHARS or pid in ids:
                _bad_id(v, f"predictions[{i}].id", pid)
            ids.add(pid)
        pm = p.model
        if pm and pm != model:
            if not model and NAME_RE.fullmatch(pm):
                model = pm
            else:
                _bad_model(v, f"predictions[{i}].model", pm, model)
        scn = p.scenario
        if scn not in good_names:
            if scn and NAME_RE.fullmatch(scn):
                good_names.add(scn)
            else:
                v.add(f"predictions[{i}].scenario", "is required" if not scn else f"must be {NAME_RULE}")
        if p.task not in KNOWN_TASKS and not evaluation_only(p):  # an evaluation-only one needs none
            v.add(f"predictions[{i}].task", "must be one of " + ", ".join(pb.Task.Name(t) for t in sorted(KNOWN_TASKS)))
        refs = p.references
        if len(refs) > max_refs:
            v.add(f"predictions[{i}].references", f"has {len(refs)} entries; at most {max_refs}")
        if check_text:
            _texts(v, f"predictions[{i}]", p, max_text)
        c = p.confidence
        if not (0.0 <= c <= 1.0):  # also false for NaN
            v.add(f"predictions[{i}].confidence", f"must be a probability in [0, 1], got {c!r}")
        if p.choice_probabilities:
            check_choices(v, f"predictions[{i}]", p)
        if p.HasField("perturbation"):
            check_perturbation(v, f"predictions[{i}]", p)
        if p.task == pb.TASK_RANKING or p.HasField("ranking"):
            check_ranking(v, f"predictions[{i}]", p, limits.max_ranking_documents)
        groups = p.groups
        if groups:
            if len(groups) > max_map:
                v.add(f"predictions[{i}].groups", f"has {len(groups)} entries; at most {max_map}")
            for key in groups:
                pair = (key, groups[key])
                if pair not in good_tags and _tag(v, f"predictions[{i}].groups", pair):
                    good_tags.add(pair)
        if p.metadata:
            _metadata(v, f"predictions[{i}].metadata", p.metadata, max_map)
        if p.HasField("timing"):
            check_timing(v, f"predictions[{i}].timing", p.timing)
        if p.evaluations:
            check_evaluations(v, f"predictions[{i}]", p, max_map, max_text)
            if evaluation_only(p):
                only_evaluations.append(i)
        at = p.produced_at
        secs = at.seconds
        if secs or at.nanos:
            if not 0 <= at.nanos < 1_000_000_000:
                v.add(f"predictions[{i}].produced_at", "has nanos outside [0, 1e9)")
            elif secs < MIN_PRODUCED_AT_S:
                v.add(f"predictions[{i}].produced_at", "is before 2000-01-01")
            elif secs > latest_s:
                v.add(f"predictions[{i}].produced_at", f"is more than {limits.future_skew_s:g} s in the future")
    if only_evaluations and len(only_evaluations) < len(preds):
        other = next(i for i in range(len(preds)) if i not in set(only_evaluations))
        v.add(
            f"predictions[{only_evaluations[0]}].evaluations",
            f"make it evaluation-only (no output) in a batch with predictions[{other}], which has an output: "
            "evaluation-only predictions go in batches of their own",
        )
    if not model and preds and not v:
        v.add("model", "is required: set it on the request or on every prediction")
    if v:
        raise InvalidArgument(list(v))
    return model


def _bad_id(v: Violations, path: str, pid: str) -> None:
    if not pid:
        v.add(path, "is required")
    elif len(pid) > MAX_ID_CHARS:
        v.add(path, f"must be at most {MAX_ID_CHARS} characters")
    else:
        v.add(path, f"duplicates the id {pid!r} of an earlier prediction in this batch")


def _bad_model(v: Violations, path: str, pm: str, model: str) -> None:
    if model:
        v.add(path, f"is {pm!r} but the batch is for {model!r}: one model per batch")
    else:
        v.add(path, f"must be {NAME_RULE}")


def _texts(v: Violations, path: str, p: pb.Prediction, max_text: int) -> None:
    if _too_long(p.input, max_text):
        v.add(f"{path}.input", f"is longer than {max_text} bytes")
    if _too_long(p.output, max_text):
        v.add(f"{path}.output", f"is longer than {max_text} bytes")
    for j, ref in enumerate(p.references):
        if _too_long(ref, max_text):
            v.add(f"{path}.references[{j}]", f"is longer than {max_text} bytes")
    if _too_long(p.source, max_text):
        v.add(f"{path}.source", f"is longer than {max_text} bytes")


def _tag(v: Violations, path: str, pair: tuple[str, str]) -> bool:
    key, value = pair
    if not TAG_RE.fullmatch(key):
        v.add(path, f"key {key[:64]!r} must be {TAG_RULE}")
        return False
    if not TAG_RE.fullmatch(value):
        v.add(path, f"value {value[:64]!r} of {key!r} must be {TAG_RULE}")
        return False
    return True


def check_choices(v: Violations, path: str, p: pb.Prediction) -> None:
    seen: set[str] = set()
    total = 0.0
    ok = True
    for cp in p.choice_probabilities:
        choice, prob = cp.choice, cp.probability
        if not choice or choice in seen or not (0.0 <= prob <= 1.0):
            ok = False
            break
        seen.add(choice)
        total += prob
    if ok:
        if abs(total - 1.0) > PROBABILITY_SUM_TOLERANCE:
            v.add(
                f"{path}.choice_probabilities", f"must sum to 1 (within {PROBABILITY_SUM_TOLERANCE:g}), got {total!r}"
            )
        return
    seen.clear()
    for j, cp in enumerate(p.choice_probabilities):  # the slow path, only to name the bad entries
        cpath = f"{path}.choice_probabilities[{j}]"
        if not cp.choice:
            v.add(f"{cpath}.choice", "is required")
        elif cp.choice in seen:
            v.add(f"{cpath}.choice", f"repeats the choice {cp.choice!r}")
        seen.add(cp.choice)
        if not (0.0 <= cp.probability <= 1.0):
            v.add(f"{cpath}.probability", f"must be a probability in [0, 1], got {cp.probability!r}")


def check_perturbation(v: Violations, path: str, p: pb.Prediction) -> None:
    pert = p.perturbation
    if not pert.name:
        v.add(f"{path}.perturbation.name", "is required")
    elif not TAG_RE.fullmatch(pert.name):
        v.add(f"{path}.perturbation.name", f"must be {TAG_RULE}")
    if pert.family not in KNOWN_PERTURBATION_FAMILIES:
        v.add(f"{path}.perturbation.family", "must be PERTURBATION_FAMILY_ROBUSTNESS or PERTURBATION_FAMILY_FAIRNESS")
    if not pert.original_id:
        v.add(f"{path}.perturbation.original_id", "is required: the id of the unperturbed prediction")
    elif len(pert.original_id) > MAX_ID_CHARS:
        v.add(f"{path}.perturbation.original_id", f"must be at most {MAX_ID_CHARS} characters")
    elif pert.original_id == p.id:
        v.add(f"{path}.perturbation.original_id", "must differ from the prediction's own id")


def _metadata(v: Violations, path: str, metadata: object, max_entries: int) -> None:
    items = dict(metadata)  # type: ignore[call-overload]
    if len(items) > max_entries:
        v.add(path, f"has {len(items)} entries; at most {max_entries}")
    for key, value in items.items():
        if not key or len(key) > RULES.metadata_key_chars:
            v.add(path, f"key {key[:32]!r} must be 1-{RULES.metadata_key_chars} characters")
        elif len(value) > RULES.metadata_value_chars:
            v.add(path, f"value of {key!r} must be at most {RULES.metadata_value_chars} characters")


def check_timing(v: Violations, path: str, t: pb.Timing) -> None:
    lat = t.latency
    ls, ln = lat.seconds, lat.nanos
    if ls < 0 or ln < 0 or ln >= 1_000_000_000 or ls >= MAX_DURATION_S:
        v.add(f"{path}.latency", f"must be a non-negative duration under {MAX_DURATION_S} s")
        return
    ttft = t.time_to_first_token
    fs, fn = ttft.seconds, ttft.nanos
    if fs or fn:
        if fs < 0 or fn < 0 or fn >= 1_000_000_000 or fs >= MAX_DURATION_S:
            v.add(f"{path}.time_to_first_token", f"must be a non-negative duration under {MAX_DURATION_S} s")
        elif (fs, fn) > (ls, ln) and t.HasField("latency"):
            v.add(f"{path}.time_to_first_token", "must not exceed latency")
