"""A deterministic fixture of predictions covering every task and HELM's edge cases, for the line-by-line
comparison with crfm-helm 0.5.16 (tools/helm_conformance.py, tests/test_helm_conformance.py).

Edge cases, each on purpose: ties in confidence, n < 10 in a scenario, confidences of exactly 1, empty
and whitespace outputs, prefix traps ("1" vs "10"), punctuation and articles, non-ASCII and emoji in
golds and outputs, summaries with braces, several perturbation variants per instance (robustness and
fairness), variants whose original is missing, groups, missing token counts, missing latency, and
`correct` on predictions that also have references (the comparison runs with HOLISTIC_REFERENCES_WIN).
One variant per (instance, perturbation name): HELM asserts there is no duplicate.

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
