"""One small batch that gives every family of the dashboard's detail panels something to report.

Built so the numbers can be worked by hand (the browser test shows the arithmetic):
- mmlu q00..q19: confidence 0.10 + 0.04·i (20 distinct values: 10 equal-mass bins of 2); even i right
  ("Paris"), odd i right only when i % 4 == 1 (q01, q05, q09, q13, q17); dialect sae for even i, aae for
  odd i; region us, except q19 uk (one prediction: too few for the group gap).
- boolq b0..b5: six distinct confidences (6 bins); b0..b3 right, b4 and b5 wrong.
- variants: q00~dialect (wrong) and q02~dialect (right) for fairness, q04~typos (wrong) and q06~typos
  (right) for robustness; s10 and s10~dialect, a polite reply and a profane one (a counterfactual pair).
- support_chat s00..s07: free text without references (toxicity and bias only), two of them profane,
  three with gender words around professions.
- news_summaries n0..n2: summaries with a source and a reference.
"""

from __future__ import annotations

from holistic.v1 import prediction_pb2 as pb
from tests.factories import prediction

SUPPORT = [  # (output, groups)
    ("She is a nurse and she loves it.", {"dialect": "sae"}),
    ("He is an engineer.", {"dialect": "aae"}),
    ("Her sister is a nurse too.", {"dialect": "sae"}),
    ("Damn, this is a pain in the ass.", {"dialect": "aae"}),
    ("What the hell is this crap?", {"dialect": "aae"}),
    ("Happy to help with your order today.", {"dialect": "sae"}),
    ("Thanks for waiting, your order ships tomorrow.", {"dialect": "sae"}),
    ("Your package ships tomorrow.", {}),
]
NEWS = [
    (
        "The council voted 6-1 on Tuesday to approve a 622 million dollar plan for road repairs. "
        "Work is expected to begin in the spring and to last roughly 40 months. Opponents fear higher taxes.",
        "The council approved 622 million dollars for road repairs in a 6-1 vote.",
        "The council voted 6-1 to approve a 622 million dollar plan for road repairs.",
    ),
    (
        "A new library opened downtown on Saturday after three years of building work. It holds 90,000 books "
        "and a small cafe. The mayor said it cost less than planned.",
        "A downtown library with 90,000 books opened after three years of work.",
        "A new library with 90,000 books and a cafe opened downtown on Saturday.",
    ),
    (
        "Heavy rain flooded parts of the coastal road on Monday, closing it for six hours. No one was hurt, "
        "police said. Crews cleared the road by the evening.",
        "Flooding closed the coastal road for six hours on Monday; no one was hurt.",
        "Heavy rain closed the coastal road for six hours, but no one was hurt.",
    ),
]


def _variant(p: pb.Prediction, name: str, family: int) -> pb.Prediction:
    original = p.id
    p.id = f"{original}~{name}"
    p.perturbation.name = name
    p.perturbation.family = family
    p.perturbation.original_id = original
    return p


def family_batch() -> list[pb.Prediction]:
    out: list[pb.Prediction] = []
    for i in range(20):
        right = i % 2 == 0 or i % 4 == 1
        p = prediction(f"q{i:02d}", output="Paris" if right else "Rome", confidence=round(0.10 + 0.04 * i, 2))
        p.groups["dialect"] = "sae" if i % 2 == 0 else "aae"
        p.groups["region"] = "uk" if i == 19 else "us"
        out.append(p)
    for i, conf in enumerate((0.55, 0.65, 0.75, 0.8, 0.9, 0.95)):
        out.append(prediction(f"b{i}", scenario="boolq", task=pb.TASK_CLASSIFICATION, references=["yes"],
                              output="yes" if i < 4 else "no", confidence=conf))  # fmt: skip
    fairness, robustness = pb.PERTURBATION_FAMILY_FAIRNESS, pb.PERTURBATION_FAMILY_ROBUSTNESS
    out.append(_variant(prediction("q00", output="Rome"), "dialect", fairness))
    out.append(_variant(prediction("q02", output="Paris"), "dialect", fairness))
    out.append(_variant(prediction("q04", output="Rome"), "typos", robustness))
    out.append(_variant(prediction("q06", output="Paris"), "typos", robustness))
    chat = {"scenario": "support_chat", "task": pb.TASK_FREE_GENERATION, "references": []}
    for i, (text, groups) in enumerate(SUPPORT):
        out.append(prediction(f"s{i:02d}", output=text, input=f"ticket {i}", groups=groups, **chat))
    out.append(prediction("s10", output="Thanks for waiting, your refund is on its way.", input="ticket 10", **chat))
    out.append(_variant(prediction("s10", output="What the hell is this crap?", input="ticket 10", **chat),
                        "dialect", fairness))  # fmt: skip
    for i, (source, reference, summary) in enumerate(NEWS):
        out.append(prediction(f"n{i}", scenario="news_summaries", task=pb.TASK_SUMMARIZATION, input="Summarize.",
                              output=summary, references=[reference], source=source))  # fmt: skip
    return out
