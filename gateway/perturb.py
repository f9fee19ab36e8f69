"""The Perturb RPC: validated like SubmitPredictions, computed off the event loop by holistic.perturbations."""

from __future__ import annotations

import asyncio

from gateway.validation import MAX_ID_CHARS, _too_long
from holistic import perturbations as pt
from holistic.errors import FieldViolation, InvalidArgument
from holistic.settings import Settings
from holistic.v1 import evaluation_service_pb2 as es


def check(request: es.PerturbRequest, limits: Settings) -> list[pt.Perturber]:
    v: list[FieldViolation] = []
    preds = request.predictions
    if not preds:
        v.append(FieldViolation("predictions", "must not be empty"))
    elif len(preds) > limits.max_batch_predictions:
        v.append(FieldViolation("predictions", f"has {len(preds)}; at most {limits.max_batch_predictions}"))
    ids: set[str] = set()
    for i, p in enumerate(preds[: limits.max_batch_predictions]):
        if not p.id or len(p.id) > MAX_ID_CHARS or p.id in ids:
            v.append(FieldViolation(f"predictions[{i}].id", f"is required, unique, at most {MAX_ID_CHARS} characters"))
        ids.add(p.id)
        if _too_long(p.input, limits.max_text_bytes):
            v.append(FieldViolation(f"predictions[{i}].input", f"is longer than {limits.max_text_bytes} bytes"))
    specs = [
        pt.Spec(s.name, dict(s.options), {k: list(w.words) for k, w in s.word_mapping.items()} or None)
        for s in request.perturbations
    ]
    try:
        perturbers = pt.build(specs)
    except InvalidArgument as exc:
        v += exc.violations
    if v:
        raise InvalidArgument(v)
    return perturbers


VARIANT_OVERHEAD = 64  # id suffix, perturbation name, family and original id, field tags


def answer_bytes(request: es.PerturbRequest, n_perturbers: int) -> int:
    """What the answer will weigh at least: each original (when included) and, per perturbation, its
    input, references and the fields a variant keeps (perturbations rarely shorten a text)."""
    total = 0
    for p in request.predictions:
        size = p.ByteSize()
        kept = size - len(p.output.encode("utf-8", "surrogatepass"))
        total += (size if request.include_originals else 0) + n_perturbers * (kept + VARIANT_OVERHEAD)
    return total


def _too_big(size: int, limit: int, estimated: bool) -> InvalidArgument:
    what = "would be about" if estimated else "grew past"
    return InvalidArgument(
        [
            FieldViolation(
                "predictions",
                f"the answer {what} {size} bytes; at most {limit} (HOLISTIC_MAX_MESSAGE_BYTES): "
                "send fewer or shorter predictions, or fewer perturbations",
            )
        ]
    )


def _bounded(
    request: es.PerturbRequest, perturbers: list[pt.Perturber], seed: int | None, limit: int
) -> es.PerturbResponse:
    """Perturb one prediction at a time, stopping as soon as the answer would pass the limit."""
    out = es.PerturbResponse()
    size = 0
    for p in request.predictions:
        rows, unchanged = pt.perturb([p], perturbers, seed, request.include_originals)
        size += sum(r.ByteSize() + 6 for r in rows)
        if size > limit:
            raise _too_big(size, limit, estimated=False)
        out.predictions.extend(rows)
        out.unchanged_count += unchanged
    return out


async def perturb(request: es.PerturbRequest, limits: Settings) -> es.PerturbResponse:
    perturbers = check(request, limits)
    limit = limits.max_message_bytes
    estimate = answer_bytes(request, len(perturbers))
    if estimate > limit:  # refused before any work
        raise _too_big(estimate, limit, estimated=True)
    seed = request.seed if request.HasField("seed") else None
    return await asyncio.to_thread(_bounded, request, perturbers, seed, limit)
