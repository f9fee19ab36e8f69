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


async def perturb(request: es.PerturbRequest, limits: Settings) -> es.PerturbResponse:
    perturbers = check(request, limits)
    seed = request.seed if request.HasField("seed") else None
    rows, unchanged = await asyncio.to_thread(
        pt.perturb, request.predictions, perturbers, seed, request.include_originals
    )
    return es.PerturbResponse(predictions=rows, unchanged_count=unchanged)
