"""One formatter for every family's signature (sacrebleu's `Signature` is the model), and its identity.

A worker records the signature it computed with beside the statistics it applies (holistic/runner.py
counts each batch's predictions under the signature's id), so a profile reports what was computed,
and a window that mixes two configurations shows each with its share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from holistic.v1.profile_pb2 import MetricSignature


def make_signature(family: str, version: str, options: Mapping[str, object], model_sha256: str = "") -> MetricSignature:
    """`family|v:<version>[|model:<sha16>]|k:v|...`, options sorted by key."""
    opts = {k: (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in options.items()}
    head = f"{family}|v:{version}" + (f"|model:{model_sha256[:16]}" if model_sha256 else "")
    text = head + "".join(f"|{k}:{v}" for k, v in sorted(opts.items()))
    return MetricSignature(family=family, version=version, options=opts, model_sha256=model_sha256, text=text)


def signature_id(sig: MetricSignature) -> str:
    """16 hex digits naming a signature: the same configuration gets the same id in every process."""
    return hashlib.sha256(sig.SerializeToString(deterministic=True)).hexdigest()[:16]
