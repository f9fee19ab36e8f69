"""The stream entry of one accepted batch: small routing fields plus the versioned envelope.

Fields: v (envelope schema version), m (model), s (per-model sequence), f (the families it is for,
comma separated: a worker skips another family's entry without decoding it), e and h (BatchEnvelope
bytes). The gateway never re-encodes predictions: e is the SubmitPredictionsRequest bytes as
received, h an encoded header BatchEnvelope (fields 1, 2 and 100+), and the envelope is e followed
by h: protobuf merges concatenated messages and the header's scalars, read last, win (see
protos/holistic/queue/v1/envelope.proto).

Version 2 keeps h apart from e so that on one Redis submit.lua can write the header's sequence and
accept time without building a copy of e: Redis's Lua hashes every byte of every string it makes.
Version 1 (e holding both) is still read: entries accepted before an upgrade.
"""

from __future__ import annotations

from dataclasses import dataclass

from holistic.queue.v1.envelope_pb2 import BatchEnvelope

VERSION = b"2"
LEGACY = b"1"  # e is the request and the header together


@dataclass(frozen=True)
class Entry:
    id: str
    model: str
    seq: int
    payload: bytes
    families: frozenset[str] | None = None  # None: an entry from before `f`, read the envelope's list
    header: bytes = b""  # h: merged over the payload (empty in a version 1 entry)

    def is_for(self, family: str) -> bool | None:
        """Whether the entry is for `family`; None when only the envelope can say (an older entry)."""
        return None if self.families is None else family in self.families

    def envelope(self) -> BatchEnvelope:
        """payload + header parsed as one message, without copying the payload to join them."""
        env = BatchEnvelope.FromString(self.payload)
        if self.header:
            env.MergeFromString(self.header)
        return env


class BadEntry(ValueError):
    """A stream entry this version cannot read."""


def fields_for(model: str, seq: int, request_bytes: bytes, header: BatchEnvelope) -> dict[str, bytes | str | int]:
    families = ",".join(header.families)
    return {"v": VERSION, "m": model, "s": seq, "f": families, "e": request_bytes, "h": header.SerializeToString()}


def _get(fields: dict[bytes, bytes], name: bytes) -> bytes:
    value = fields.get(name)
    if value is None:
        raise BadEntry(f"stream entry has no {name.decode()!r} field")
    return value


def parse(entry_id: bytes | str, fields: dict[bytes, bytes]) -> Entry:
    eid = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    version = _get(fields, b"v")
    if version not in (VERSION, LEGACY):
        raise BadEntry(f"envelope version {version!r} is not {VERSION!r} or {LEGACY!r}")
    try:
        seq = int(_get(fields, b"s"))
    except ValueError as exc:
        raise BadEntry(f"bad sequence {fields.get(b's')!r}") from exc
    raw_families = fields.get(b"f")
    families = None if raw_families is None else frozenset(raw_families.decode().split(","))
    header = _get(fields, b"h") if version == VERSION else b""
    return Entry(eid, _get(fields, b"m").decode(), seq, _get(fields, b"e"), families, header)
