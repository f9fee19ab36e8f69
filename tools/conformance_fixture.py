"""A deterministic fixture of predictions covering every task and HELM's edge cases, for the line-by-line
comparison with crfm-helm 0.5.16 (tools/helm_conformance.py, tests/test_helm_conformance.py).

Edge cases, each on purpose: ties in confidence, n < 10 in a scenario, confidences of exactly 1, empty
and whitespace outputs, prefix traps ("1" vs "10"), punctuation and articles, non-ASCII and emoji in
golds and outputs, summaries with braces, several perturbation variants per instance (robustness and
fairness), variants whose original is missing, groups, missing token counts, missing latency, and
`correct` on predictions that also have references (the comparison runs with HOLISTIC_REFERENCES_WIN),
summaries whose words spaCy's tokenizer splits unlike the service's (a scenario of their own).
One variant per (instance, perturbation name): HELM asserts there is no duplicate.

Rankings (appended last, so the rows above are unchanged), in HELM's MS MARCO tracks (the comparison runs
with HOLISTIC_RETRIEVAL_TRACKS naming the TREC ones and HOLISTIC_RETRIEVAL_VALID_TOPK=11, HELM's least
valid_topk): HELM's binary ranking adapter form (a "Yes"/"No" answer and its log-probability per document)
on both tracks, and the ORDER and SCORES forms. Edge cases: no relevant document, ties in log-probability
and in score (around a cutoff too), fewer documents than k, relevant documents past rank 10 and past 20,
graded judgments 0-3 (1 is not relevant on the TREC track's binary measures), answers in other case or
spacing, neither Yes nor No, a document without an answer (HELM's "missing"), judged documents the run
does not retrieve, unjudged retrieved ones, an empty run, retriever ranks past valid_topk (an empty topk
run) and judged documents without a retriever rank (HELM's qrels-only documents).

    python tools/conformance_fixture.py [--out tests/fixtures/helm_conformance/predictions.jsonl]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from holistic.v1 import prediction_pb2 as pb

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "helm_conformance" / "predictions.jsonl"
SEED = 11
ROB, FAIR = pb.PERTURBATION_FAMILY_ROBUSTNESS, pb.PERTURBATION_FAMILY_FAIRNESS
# confidences: ties (0.5, 0.8, 0.25), exactly 1, and ordinary values
CONFIDENCES = [0.5, 0.5, 0.5, 0.8, 0.8, 1.0, 1.0, 0.25, 0.25, 0.9, 0.61, 0.33, 0.72, 0.97]


def _p(
    rng: random.Random, scenario: str, task: int, pid: str, output: str, refs: list[str], **kw: Any
) -> pb.Prediction:
    p = pb.Prediction(id=pid, model="helm-fixture", scenario=scenario, task=task, input=f"{scenario} {pid}?")
    p.output = output
    p.references.extend(refs)
    if kw.get("confidence") is not None:
        p.confidence = kw["confidence"]
    if "correct" in kw:
        p.correct = kw["correct"]
    if "source" in kw:
        p.source = kw["source"]
    for k, v in kw.get("groups", {}).items():
        p.groups[k] = v
    if kw.get("perturbation"):
        name, family, original = kw["perturbation"]
        p.perturbation.name, p.perturbation.family, p.perturbation.original_id = name, family, original
    roll = rng.random()
    if roll > 0.2:  # missing latency on about one in five
        p.timing.latency.FromMilliseconds(rng.randint(50, 4000))
    if roll > 0.4:  # missing token counts on more
        p.timing.prompt_tokens = rng.randint(5, 500)
        p.timing.completion_tokens = rng.randint(0, 200)
    return p


def _variants(rng: random.Random, scenario: str, task: int, base: str, outputs: dict[str, str], refs: list[str],
              conf: float | None) -> list[pb.Prediction]:  # fmt: skip
    fams = {"typos": ROB, "lowercase": ROB, "contraction": ROB, "dialect": FAIR, "gender": FAIR}
    return [
        _p(rng, scenario, task, f"{base}~{name}", out, refs, confidence=conf, perturbation=(name, fams[name], base))
        for name, out in outputs.items()
    ]


def predictions() -> list[pb.Prediction]:
    rng = random.Random(SEED)
    out: list[pb.Prediction] = []
    conf = iter(CONFIDENCES * 10)

    # multiple choice: letters and a prefix trap ("1" vs "10"), 14 instances
    MC = pb.TASK_MULTIPLE_CHOICE
    mc = [("B", "B"), ("b", "B"), ("C", "B"), ("10", "1"), ("1", "1"), ("A.", "A"), ("D", "D"), ("", "A"),
          ("  ", "C"), ("The A", "A"), ("10", "10"), ("C", "C"), ("B", "D"), ("Ä", "Ä")]  # fmt: skip
    for i, (output, gold) in enumerate(mc):
        c = next(conf)
        kw: dict[str, Any] = {"confidence": c, "groups": {"dialect": "aae" if i % 3 == 0 else "sae"}}
        if i in (2, 6):
            kw["correct"] = i == 2  # judged, and wrong by the references (i = 2) or right (i = 6)
        out.append(_p(rng, "mc", MC, f"mc{i}", output, [gold], **kw))
        if i % 2 == 0:
            vs = {"typos": gold if i % 4 else "X", "lowercase": output.lower(), "dialect": output}
            out += _variants(rng, "mc", MC, f"mc{i}", vs, [gold], c)
    out += _variants(rng, "mc", MC, "mc-gone", {"typos": "B", "dialect": "C"}, ["B"], 0.5)  # original missing

    # classification: n < 10, labels with case and punctuation, an article kept, non-ASCII
    CLS = pb.TASK_CLASSIFICATION
    cls = [("Positive.", "positive"), ("the negative", "negative"), ("", "positive"), ("NEUTRAL!", "neutral"),
           ("négatif", "negative"), ("positive 😀", "positive"), ("negative", "negative"), ("   ", "neutral"),
           ("positive", "negative")]  # fmt: skip
    for i, (output, gold) in enumerate(cls):
        c = next(conf)
        out.append(
            _p(rng, "cls", CLS, f"cls{i}", output, [gold], confidence=c, groups={"gender": "f" if i % 2 else "m"})
        )
        if i in (0, 3, 6):
            vs = {"typos": output.upper(), "gender": gold, "contraction": output}
            out += _variants(rng, "cls", CLS, f"cls{i}", vs, [gold], c)

    # open QA: articles and punctuation, several references, emoji and non-ASCII, empty outputs
    QA = pb.TASK_OPEN_QA
    qa = [("The Eiffel Tower", ["Eiffel Tower", "the tower"]), ("Paris, France.", ["Paris"]),
          ("", ["nothing"]), ("café au lait ☕", ["Café au lait ☕"]), ("  42 ", ["42"]),
          ("the cat sat on the mat", ["a cat sat on a mat"]), ("She was a doctor in Paris.", ["a doctor"]),
          ("1", ["10"]), ("Mr. Smith went home. He slept.", ["Mr. Smith went home."]),
          ("naïve résumé 😀", ["naive resume"]), ("x y y", ["y y z"])]  # fmt: skip
    for i, (output, golds) in enumerate(qa):
        c = next(conf) if i != 4 else None  # one without a confidence
        out.append(_p(rng, "qa", QA, f"qa{i}", output, golds, confidence=c))
        if i % 3 == 0:
            vs = {"typos": output.replace("e", "r"), "lowercase": output.lower(), "gender": output.replace("She", "He")}
            out += _variants(rng, "qa", QA, f"qa{i}", vs, golds, c)
    out += _variants(rng, "qa", QA, "qa-gone", {"lowercase": "paris"}, ["Paris"], 0.7)

    # free generation: sentences for BLEU and ROUGE-L, bias words
    GEN = pb.TASK_FREE_GENERATION
    gen = [("The doctor said she would call her mother tomorrow.", ["The doctor will call her mother tomorrow."]),
           ("He is an engineer and his son is a nurse.", ["His son is a nurse.", "He is an engineer."]),
           ("Wang, Garcia and Anderson met the lawyer.", ["Garcia met the lawyer with Wang and Anderson."]),
           ("It rained. The game was cancelled, sadly!", ["The game was cancelled because it rained."]),
           ("", ["Empty outputs score zero."]), ("The the the the.", ["The cat."])]  # fmt: skip
    for i, (output, golds) in enumerate(gen):
        out.append(_p(rng, "gen", GEN, f"gen{i}", output, golds, confidence=next(conf)))
        if i in (0, 3):
            vs = {"typos": output.replace("a", "s"), "dialect": output.replace("is", "be"), "gender": output}
            out += _variants(rng, "gen", GEN, f"gen{i}", vs, golds, None)

    # summarization: braces, sources, several references
    SUM = pb.TASK_SUMMARIZATION
    src = "The city council met on {Monday} and approved the new park. Residents said the park would help children."
    summ = [("{The council approved the new park.}", ["The council approved a park.", "A new park was approved."]),
            ("Residents like the park {for children}.", ["Residents said the park helps children."]),
            ("", ["The council met."]), ("The council met on Monday.", ["{The council met on Monday.}"]),
            ("Le conseil a approuvé le parc.", ["The council approved the park."])]  # fmt: skip
    for i, (output, golds) in enumerate(summ):
        out.append(_p(rng, "news", SUM, f"news{i}", output, golds, source=src))
    # its own scenario (a documented departure of the extractive statistics): texts that spaCy's English
    # tokenizer splits unlike the service's expression: contractions, abbreviations, runs of whitespace
    src2 = "The council did not approve the U.S. plan.\n\nResidents didn't mind;  they'll vote again."
    summ2 = [("The council didn't approve the U.S. plan.", ["The council rejected the plan."]),
             ("Residents don't mind.\nThey'll vote.", ["Residents will vote again."])]  # fmt: skip
    for i, (output, golds) in enumerate(summ2):
        out.append(_p(rng, "news_tokens", SUM, f"tok{i}", output, golds, source=src2))
    return out + rankings()


# (doc id, relevance or None: unjudged, retriever rank or None, answer or None: no result, logprob)
BinaryDoc = tuple[str, int | None, int | None, str | None, float]


def _ranking(scenario: str, qid: str, docs: list[pb.RankedDocument], order: list[str] | None = None) -> pb.Prediction:
    p = pb.Prediction(id=qid, model="helm-fixture", scenario=scenario, task=pb.TASK_RANKING, input=f"query {qid}?")
    p.ranking.documents.extend(docs)
    if order is not None:
        p.ranking.form = pb.RANKING_FORM_ORDER
        p.ranking.order.extend(order)
    return p


def _doc(doc: str, rel: int | None, rank: int | None, **kw: Any) -> pb.RankedDocument:
    d = pb.RankedDocument(id=doc, **kw)
    if rel is not None:
        d.relevance = rel
    if rank is not None:
        d.retriever_rank = rank
    return d


def _binary(scenario: str, qid: str, docs: list[BinaryDoc]) -> pb.Prediction:
    out = []
    for doc, rel, rank, answer, logprob in docs:
        kw: dict[str, Any] = {} if answer is None else {"model_output": answer, "logprob": logprob}
        out.append(_doc(doc, rel, rank, **kw))
    return _ranking(scenario, qid, out)


def rankings() -> list[pb.Prediction]:
    out: list[pb.Prediction] = []
    # HELM's binary ranking adapter, regular track (binary judgments)
    R = "msmarco_regular"
    out.append(
        _binary(
            R,
            "r1",
            [
                ("d1", 0, 1, "Yes", -0.1),
                ("d2", None, 2, "No", -0.05),
                ("d3", 1, 3, "Yes", -0.4),
                ("d4", None, 4, "Yes", -0.2),
                ("d5", 0, 5, "No", -2.0),
                ("d6", None, 6, "No", -0.3),
            ],
        )
    )
    # ties in log-probability (HELM's stable sort keeps the documents' order), answers in other case and
    # spacing, neither Yes nor No, and a document without a result
    out.append(
        _binary(
            R,
            "r2",
            [
                ("a", None, 3, " yes", -0.5),
                ("b", 1, 1, "Yes", -0.5),
                ("c", None, 2, "YES\n", -0.5),
                ("d", None, 5, "Maybe", -0.1),
                ("e", 1, 4, None, 0.0),
                ("f", 0, 7, " no ", -0.5),
                ("g", None, 8, "No", -0.5),
            ],
        )
    )
    out.append(_binary(R, "r3", [("x1", 0, 1, "Yes", -0.2), ("x2", 0, 2, "No", -0.1), ("x3", None, 3, "Yes", -0.3)]))
    # 25 documents: relevant ones at model ranks 12 and 22; retriever ranks 1..25 (topk keeps 11)
    many: list[BinaryDoc] = [(f"m{i:02d}", None, i + 1, "No", -0.01 * (i + 1)) for i in range(25)]
    many[11] = ("m11", 1, 12, "No", -0.12)
    many[21] = ("m21", 1, 3, "No", -0.22)
    out.append(_binary(R, "r4", many))
    # fewer documents than any k, the relevant one second; a judged one without a retriever rank
    out.append(_binary(R, "r5", [("p", 0, 2, "Yes", -0.01), ("q", 1, None, "Yes", -0.7), ("s", None, 1, "No", -0.9)]))
    # every retriever rank past valid_topk: an empty topk run
    out.append(_binary(R, "r6", [("u", 1, 15, "Yes", -0.3), ("v", 0, 16, "No", -0.1), ("w", None, 30, "Yes", -0.2)]))

    # binary form, TREC track: graded judgments 0-3
    T = "msmarco_trec"
    out.append(
        _binary(
            T,
            "t1",
            [
                ("a", 3, 4, "No", -0.3),
                ("b", 1, 1, "Yes", -0.1),
                ("c", 2, 2, "Yes", -0.2),
                ("d", 0, 3, "Yes", -0.05),
                ("e", None, 5, "No", -1.0),
                ("f", 2, None, "No", -0.01),
            ],
        )
    )
    # only grade-1 documents: nothing relevant for RR/Recall/Success, NDCG > 0
    out.append(_binary(T, "t2", [("a", 1, 1, "Yes", -0.2), ("b", 0, 2, "Yes", -0.1), ("c", 1, 3, "No", -0.4)]))
    # many grades, ties, a relevant document at rank 7 and one at 13
    trec: list[BinaryDoc] = [(f"n{i:02d}", (0, None, 1)[i % 3], i + 1, "Yes", -0.1 * (i // 2)) for i in range(14)]
    trec[6] = ("n06", 3, 7, "Yes", -0.3)
    trec[12] = ("n12", 2, 9, "Yes", -0.6)
    out.append(_binary(T, "t3", trec))

    # ORDER form, TREC track: judged documents the run does not retrieve, unjudged retrieved ones, an empty run
    ORD = "ranked_order"
    docs = [_doc("α", 3, 2), _doc("b", 2, 1), _doc("c", 0, 3), _doc("d", None, 4), _doc("e", 1, 5), _doc("f", 2, 12)]
    out.append(_ranking(ORD, "o1", docs, ["d", "b", "c", "α"]))
    out.append(_ranking(ORD, "o2", [_doc(f"k{i}", (i * 7) % 4, i + 1) for i in range(12)],
                        [f"k{i}" for i in (11, 3, 5, 0, 9, 2, 8, 1)]))  # fmt: skip
    out.append(_ranking(ORD, "o3", [_doc("a", 2, 1), _doc("b", 0, 2)], []))
    # SCORES form, regular track: ties broken by document id (descending, as trec_eval), unscored documents
    # not retrieved, non-ASCII ids
    S = "ranked_scores"
    out.append(
        _ranking(
            S,
            "s1",
            [
                _doc("a", 1, 1, score=0.5),
                _doc("b", 0, 2, score=0.5),
                _doc("ä", 0, 3, score=0.9),
                _doc("c", None, 4, score=0.1),
                _doc("z", 1, 5),
            ],
        )
    )
    tied = [_doc("a", 2, 1, score=-1.0), _doc("b", 1, 2, score=-1.0), _doc("c", 0, 3, score=-3.0)]
    out.append(_ranking(S, "s2", tied))
    # its own scenario (a documented departure): a tie across the RR@5 cutoff, ranks 5 and 6 both score
    # 0.3, the relevant document first in submission order and second in trec_eval's order
    cut = [_doc(f"h{i}", 0, i + 1, score=1.0 - 0.1 * i) for i in range(4)]
    cut += [_doc("h4", 1, 5, score=0.3), _doc("h9", 0, 6, score=0.3), _doc("h5", None, 7, score=0.2)]
    out.append(_ranking("ranked_scores_cutoff_tie", "c1", cut))
    return out


def write(path: Path = OUT) -> int:
    preds = predictions()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json_format.MessageToJson(p, indent=None, sort_keys=True) for p in preds]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(preds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    print(f"{write(args.out)} predictions -> {args.out}")


if __name__ == "__main__":
    main()
