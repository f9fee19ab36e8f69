"""Proving a batch valid from its request bytes in C, before any Python touches a prediction.

gateway/_wireproof.c walks the protobuf wire format once and answers only when every rule of
validation.validate holds for the batch: the model, whether the bytes are already the canonical
(deterministic) encoding, so their sha256 is the content digest as they stand, and the batch's
distinct group (key, value) pairs with the first prediction carrying each. Anything it does not
understand (a field sent twice, an unknown field, a wrong wire type, an encoding it
cannot prove canonical) is "cannot prove" or "not canonical", never a wrong "valid": the Python
path (columns, then the walk that names every bad field) decides those batches, exactly as before.
tests/gateway/test_wire_proof.py holds it to validate() and to SerializeToString(deterministic=True)
on generated batches, good and bad.

The module is compiled by tools/build_native.py (pip install, ./dev). Without it, `prove` is None
and the gateway says so once in its log.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple

from gateway.request_rules import RULES
from holistic.settings import Settings

log = logging.getLogger("holistic.gateway")

try:
    from gateway import _wireproof
except ImportError as exc:  # no compiler where this was installed
    _wireproof = None
    _MISSING = str(exc)
else:
    _wireproof.configure(RULES.as_c_table())  # the C holds no copy of the rules' limits


class Proof(NamedTuple):
    model: str
    batch_id: str
    canonical: bool  # the bytes are SerializeToString(deterministic=True) of their parse
    count: int
    pairs: list[tuple[str, str, int]]  # distinct group (key, value, first prediction), in order


def available() -> bool:
    return _wireproof is not None


def prove(raw: bytes, limits: Settings, now_s: float) -> Proof | None:
    """The batch's proof, or None when C cannot prove it valid (or is not built)."""
    if _wireproof is None:
        return None
    got = _wireproof.prove(
        raw,
        limits.max_batch_predictions,
        limits.max_text_bytes,
        limits.max_references,
        limits.max_map_entries,
        limits.max_ranking_documents,
        math.floor(now_s + limits.future_skew_s),  # produced_at (whole seconds) > latest <=> > its floor
    )
    return None if got is None else Proof(*got)


def warn_if_missing() -> None:
    if _wireproof is None:
        log.warning(
            "the gateway's C wire proof is not built (%s): validation runs in Python, about 5 us a prediction; "
            "build it with `python tools/build_native.py` (needs a C compiler and the Python headers)",
            _MISSING,
        )
