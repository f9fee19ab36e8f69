"""Validation of a TASK_RANKING prediction's `ranking` (holistic.v1.Ranking), field by field.

A ranking names each document once; its judged relevance is a non-negative integer (carried as a
double so a client's 1.5 is refused here, by name, rather than truncated); an ORDER names only
its documents, each once; scores and log-probabilities are finite; a form given explicitly
matches what is set; at most HOLISTIC_MAX_RANKING_DOCUMENTS documents.
"""

from __future__ import annotations

import math
from typing import Protocol

from gateway.request_rules import RULES
from holistic.v1 import prediction_pb2 as pb

MAX_DOC_ID_CHARS = RULES.id_chars
KNOWN_FORMS = frozenset(pb.RankingForm.values())


class Violations(Protocol):
    def add(self, field: str, description: str) -> None: ...


def judgments_only(p: pb.Prediction) -> bool:
    """A ranking prediction that carries only judgments: it shares its id with its ranking."""
    r = p.ranking
    if r.form:
        return r.form == pb.RANKING_FORM_JUDGMENTS_ONLY
    return not r.order and not any(d.HasField("score") or d.HasField("model_output") for d in r.documents)


def check_ranking(v: Violations, path: str, p: pb.Prediction, max_documents: int) -> None:
    """Add a violation for each bad field of p.ranking (and a ranking on the wrong task, or none)."""
    has = p.HasField("ranking")
    if p.task != pb.TASK_RANKING:
        if has:
            v.add(f"{path}.ranking", "is only for TASK_RANKING predictions")
        return
    if not has:
        v.add(f"{path}.ranking", "is required for TASK_RANKING: the documents, the ranking and/or judgments")
        return
    r = p.ranking
    rpath = f"{path}.ranking"
    docs = r.documents
    if len(docs) > max_documents:
        v.add(
            f"{rpath}.documents", f"has {len(docs)} documents; at most {max_documents} (HOLISTIC_MAX_RANKING_DOCUMENTS)"
        )
        return
    if r.form not in KNOWN_FORMS:
        v.add(f"{rpath}.form", "must be one of " + ", ".join(pb.RankingForm.keys()))
    ids: set[str] = set()
    for j, d in enumerate(docs):
        dpath = f"{rpath}.documents[{j}]"
        did = d.id
        if not did:
            v.add(f"{dpath}.id", "is required")
        elif len(did) > MAX_DOC_ID_CHARS:
            v.add(f"{dpath}.id", f"must be at most {MAX_DOC_ID_CHARS} characters")
        elif did in ids:
            v.add(f"{dpath}.id", f"duplicates the document id {did!r} of an earlier document")
        ids.add(did)
        if d.HasField("relevance"):
            rel = d.relevance
            if not math.isfinite(rel) or rel < 0 or rel != int(rel):
                v.add(f"{dpath}.relevance", f"must be a non-negative integer, got {rel!r}")
        if d.HasField("score") and not math.isfinite(d.score):
            v.add(f"{dpath}.score", f"must be finite, got {d.score!r}")
        if d.HasField("logprob") and not math.isfinite(d.logprob):
            v.add(f"{dpath}.logprob", f"must be finite, got {d.logprob!r}")
        if d.HasField("retriever_rank") and d.retriever_rank < 1:
            v.add(f"{dpath}.retriever_rank", "must be at least 1 (1 = the retriever's best)")
    _check_form(v, rpath, r, ids)


def _check_form(v: Violations, rpath: str, r: pb.Ranking, ids: set[str]) -> None:
    form = r.form
    if form not in pb.RankingForm.values():  # an enum value this version does not know
        v.add(f"{rpath}.form", f"unknown ranking form {form}; use one of {', '.join(pb.RankingForm.keys())}")
        return
    if r.order:
        if form not in (pb.RANKING_FORM_UNSPECIFIED, pb.RANKING_FORM_ORDER):
            v.add(f"{rpath}.order", f"is set but form is {pb.RankingForm.Name(form)}")
        seen: set[str] = set()
        for j, doc in enumerate(r.order):
            if doc not in ids:
                v.add(f"{rpath}.order[{j}]", f"names {doc[:64]!r}, which is not among the documents")
            elif doc in seen:
                v.add(f"{rpath}.order[{j}]", f"repeats the document {doc[:64]!r}")
            seen.add(doc)
    docs = r.documents
    if form == pb.RANKING_FORM_SCORES and not any(d.HasField("score") for d in docs) and docs:
        v.add(f"{rpath}.documents", "form is RANKING_FORM_SCORES but no document has a score")
    if form == pb.RANKING_FORM_BINARY and not any(d.HasField("model_output") for d in docs) and docs:
        v.add(f"{rpath}.documents", "form is RANKING_FORM_BINARY but no document has a model_output")
    if form == pb.RANKING_FORM_JUDGMENTS_ONLY and not any(d.HasField("relevance") for d in docs):
        v.add(f"{rpath}.documents", "form is RANKING_FORM_JUDGMENTS_ONLY but no document has a relevance")
