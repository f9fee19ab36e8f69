"""A batch's per-document fields read in bulk, without a Python object per document.

Reading a document's fields out of a parsed protobuf message costs about 0.8 µs a document in
Python (a wrapper object, then each field), most of a query's cost at 100 documents. Here each
ranking is serialized (C) and parsed as a view whose `documents` are plain bytes (C), the batch's
documents are joined, and numpy walks the wire format of every document at once: RankedDocument
is id (1, length-delimited), score (2, fixed64), model_output (3), logprob (4), relevance (5,
fixed64), retriever_rank (6, varint), written in field-number order by the serializer. Anything
else (an unknown field, a length over 2 bytes of varint) makes `read` return None and the caller
reads the messages one by one; the result is the same either way (tests compare both).

`runs` then gives each query's SCORES run (score descending, ties by id descending byte-wise, as
trec_eval breaks them) and its judgments, as the per-query rows need them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from holistic.v1 import prediction_pb2 as pb

_F = descriptor_pb2.FieldDescriptorProto


def _view_class() -> type:
    """holistic.v1.Ranking read with its documents as bytes (same field number, so the same wire)."""
    fd = descriptor_pb2.FileDescriptorProto(
        name="holistic_retrieval_ranking_view.proto", package="holistic_retrieval_view", syntax="proto3"
    )
    msg = fd.message_type.add(name="RankingView")
    msg.field.add(name="documents", number=1, type=_F.TYPE_BYTES, label=_F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("holistic_retrieval_view.RankingView"))


_RankingView = _view_class()
_ID, _SCORE, _OUTPUT, _LOGPROB, _RELEVANCE, _RETRIEVER = 0x0A, 0x11, 0x1A, 0x21, 0x29, 0x30
_PAD = bytes(32)


@dataclass
class Columns:
    """The documents of a batch's rankings, in order; `first[q]:first[q + 1]` are ranking q's."""

    raw: bytes
    first: np.ndarray  # int64, one more than the rankings
    id_at: list[int]  # where each id's UTF-8 bytes start in raw
    id_len: list[int]
    has_score: np.ndarray  # bool
    score: np.ndarray  # float64 (0 where absent)
    has_output: np.ndarray  # bool: a binary adapter's answer (model_output)
    has_relevance: np.ndarray  # bool
    relevance: np.ndarray  # float64 (0 where absent)

    def doc_ids(self, docs: list[int]) -> list[str]:
        at, length, raw = self.id_at, self.id_len, self.raw
        return [raw[at[i] : at[i] + length[i]].decode() for i in docs]

    def __post_init__(self) -> None:
        # Python ints: indexing a numpy array one element at a time costs more than the slice.
        self.id_at = self.id_at.tolist()  # type: ignore[assignment]
        self.id_len = self.id_len.tolist()  # type: ignore[assignment]


def _varint2(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A varint of at most 2 bytes at each position: value, its length, and whether it fits."""
    b1 = buf[at].astype(np.int64)
    b2 = buf[at + 1].astype(np.int64)
    long = b1 >= 0x80
    value = np.where(long, (b1 & 0x7F) | (b2 << 7), b1)
    return value, 1 + long, ~long | (b2 < 0x80)


def _doubles(buf: np.ndarray, at: np.ndarray, present: np.ndarray) -> np.ndarray:
    out = np.zeros(len(at), np.float64)
    where = np.flatnonzero(present)
    if len(where):
        raw = buf[at[where, None] + np.arange(8)]
        out[where] = np.ascontiguousarray(raw).view("<f8").ravel()
    return out


def read(rankings: list[pb.Ranking]) -> Columns | None:
    """The rankings' documents, or None when one of them is not in the layout above."""
    docs: list[bytes] = []
    counts = np.empty(len(rankings) + 1, np.int64)
    counts[0] = 0
    view = _RankingView.FromString
    for q, ranking in enumerate(rankings, start=1):
        mine = view(ranking.SerializeToString()).documents
        docs += mine
        counts[q] = len(mine)
    first = np.cumsum(counts)
    raw = b"".join(docs)
    lengths = np.fromiter(map(len, docs), np.int64, len(docs))
    end = np.cumsum(lengths)
    start = end - lengths
    buf = np.frombuffer(raw + _PAD, np.uint8)
    limit = len(raw)

    def tag(at: np.ndarray, want: int) -> np.ndarray:
        return (at < end) & (buf[np.minimum(at, limit)] == want)

    at = start
    ok = buf[np.minimum(at, limit)] == _ID
    id_len, n, fits = _varint2(buf, np.minimum(at + 1, limit))
    ok &= fits
    id_at = at + 1 + n
    at = np.minimum(id_at + id_len, limit)
    has_score = tag(at, _SCORE)
    score_at = at + 1
    at = at + 9 * has_score
    has_output = tag(at, _OUTPUT)
    out_len, n, fits = _varint2(buf, np.minimum(at + 1, limit))
    ok &= ~has_output | fits
    at = np.minimum(at + has_output * (1 + n + out_len), limit)
    at = at + 9 * tag(at, _LOGPROB)
    has_relevance = tag(at, _RELEVANCE)
    relevance_at = at + 1
    at = at + 9 * has_relevance
    has_rank = tag(at, _RETRIEVER)
    _, n, fits = _varint2(buf, np.minimum(at + 1, limit))
    ok &= ~has_rank | fits
    at = at + has_rank * (1 + n)
    if not bool(np.all(ok & (at == end))):
        return None
    return Columns(
        raw=raw,
        first=first,
        id_at=id_at,
        id_len=id_len,
        has_score=has_score,
        score=_doubles(buf, score_at, has_score),
        has_output=has_output,
        has_relevance=has_relevance,
        relevance=_doubles(buf, relevance_at, has_relevance),
    )


def top_runs(cols: Columns, queries: np.ndarray, limit: int) -> np.ndarray:
    """Per ranking q in `queries`, a row of the document indices of its SCORES run's first `limit`
    (-1 past its run): scored documents by score descending, equal scores by id descending (UTF-8
    bytes, trec_eval's strcmp). One row per query, padded with -inf (no score: not retrieved),
    sorted row-wise at once."""
    first = cols.first
    starts = first[queries]
    lengths = first[queries + 1] - starts
    width = int(lengths.max()) if len(lengths) else 0
    if width == 0:
        return np.full((len(queries), limit), -1, np.int64)
    row = np.repeat(np.arange(len(queries)), lengths)
    col = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    doc = starts[row] + col
    scores = np.full((len(queries), width), -np.inf)
    scores[row, col] = np.where(cols.has_score[doc], cols.score[doc], -np.inf)
    docs = np.full((len(queries), width), -1, np.int64)
    docs[row, col] = doc
    order = np.argsort(-scores, axis=1)
    ranked_scores = np.take_along_axis(scores, order, 1)
    ranked = np.take_along_axis(docs, order, 1)
    ranked[ranked_scores == -np.inf] = -1
    # Equal scores: groups of equal neighbours that reach into the first `limit`, ordered by id.
    same = np.zeros((len(queries), width + 1), np.int8)
    same[:, 1:width] = (ranked_scores[:, 1:] == ranked_scores[:, :-1]) & (ranked_scores[:, 1:] > -np.inf)
    edges = np.diff(same, axis=1)
    g_row, g_start = np.nonzero(edges == 1)
    _, g_end = np.nonzero(edges == -1)
    reach = g_start < limit  # a group is sorted g_start..g_end (inclusive)
    if reach.any():
        raw, id_at, id_len = cols.raw, cols.id_at, cols.id_len
        for r, g, h in zip(g_row[reach].tolist(), g_start[reach].tolist(), (g_end[reach] + 1).tolist(), strict=True):
            group = ranked[r, g:h].tolist()
            group.sort(key=lambda i: raw[id_at[i] : id_at[i] + id_len[i]], reverse=True)
            ranked[r, g:h] = group
    out = np.full((len(queries), limit), -1, np.int64)
    out[:, : min(limit, width)] = ranked[:, :limit]
    return out


def run_lists(tops: np.ndarray) -> list[list[int]]:
    """top_runs' rows as lists, without the -1 padding."""
    counts = np.count_nonzero(tops >= 0, axis=1).tolist()
    return [row[:n] for row, n in zip(tops.tolist(), counts, strict=True)]
