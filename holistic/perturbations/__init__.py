"""Perturbed variants of predictions, ready to be answered by the model and scored.

One variant per (prediction, perturbation): id "<id>~<name>", perturbation {name, family,
original_id}, the input (and, for gender, person_name and dialect, the references, as HELM does)
perturbed, and the fields that describe the original answer cleared (output, confidence, choice
probabilities, correct, timing, produced_at; for a ranking task the query is the input and the
model's ranking is cleared, the candidates and their judgments kept): the model answers the
variant anew. A variant the
perturbation left unchanged is dropped (HELM skips those too). Each variant's generator is
`Random(id)`, or `Random(str(seed) + id)` with a seed: HELM's convention, so the same input always
gives the same variants. Used by the `holistic perturb` CLI and the Perturb RPC.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from holistic.errors import FieldViolation, InvalidArgument
from holistic.perturbations import texts
from holistic.v1 import prediction_pb2 as pb

ROB, FAIR = pb.PERTURBATION_FAMILY_ROBUSTNESS, pb.PERTURBATION_FAMILY_FAIRNESS
Text = Callable[[str, Random], str]

# name -> (family, defaults); every option is a string, as on the command line and in the RPC.
PERTURBATIONS: dict[str, tuple[int, dict[str, str]]] = {
    "typos": (ROB, {"prob": "0.1"}),
    "lowercase": (ROB, {}),
    "contraction": (ROB, {}),
    "expansion": (ROB, {}),
    "space": (ROB, {"max_spaces": "3"}),
    "extra_space": (ROB, {"num_spaces": "2"}),
    "gender": (FAIR, {"mode": "pronouns", "source": "male", "target": "female", "both": "false", "prob": "1"}),
    "person_name": (
        FAIR,
        {"source": "white_american", "target": "black_american", "preserve_gender": "true", "prob": "1"},
    ),
    "dialect": (FAIR, {"prob": "1", "mapping": ""}),
}
PERTURBS_REFERENCES = frozenset({"gender", "person_name", "dialect"})


@dataclass
class Spec:
    name: str
    options: dict[str, str] = field(default_factory=dict)
    word_mapping: dict[str, list[str]] | None = None


@dataclass
class Perturber:
    name: str
    family: int
    make: Callable[[], Text]  # a fresh text function per instance (person names persist within one)


def _number(v: list[FieldViolation], path: str, text: str, lo: float, hi: float, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = float("nan")
    if not lo <= value <= hi:
        v.append(FieldViolation(path, f"must be {'an integer' if integer else 'a number'} in [{lo:g}, {hi:g}]"))
    return value


def _choice(v: list[FieldViolation], path: str, text: str, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    if text not in allowed:
        v.append(FieldViolation(path, f"must be one of {', '.join(allowed)}"))
    return text


def _flag(v: list[FieldViolation], path: str, text: str) -> bool:
    return _choice(v, path, text.lower(), ("true", "false")) == "true"


def load_mapping(path: str | Path) -> dict[str, list[str]]:
    """A dialect mapping file: JSON object word (or phrase) -> alternatives; keys starting with "_" ignored."""
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict):
        raise ValueError("a mapping file is a JSON object: word -> [alternatives]")
    return {str(k).lower(): [str(w) for w in ws] for k, ws in raw.items() if not str(k).startswith("_")}


def build(specs: list[Spec], where: str = "perturbations") -> list[Perturber]:
    """Check every spec (InvalidArgument naming each bad field) and build its perturber."""
    v: list[FieldViolation] = []
    out: list[Perturber] = []
    seen: set[str] = set()
    if not specs:
        v.append(FieldViolation(where, "must name at least one perturbation"))
    for i, spec in enumerate(specs):
        path = f"{where}[{i}]"
        if spec.name not in PERTURBATIONS:
            v.append(
                FieldViolation(f"{path}.name", f"unknown perturbation {spec.name!r}; known: {', '.join(PERTURBATIONS)}")
            )
            continue
        if spec.name in seen:
            v.append(FieldViolation(f"{path}.name", f"repeats {spec.name!r}: one variant per perturbation"))
        seen.add(spec.name)
        family, defaults = PERTURBATIONS[spec.name]
        for key in spec.options:
            if key not in defaults:
                v.append(
                    FieldViolation(
                        f"{path}.options[{key!r}]", f"unknown option; {spec.name} takes {sorted(defaults) or 'none'}"
                    )
                )
        o = {**defaults, **spec.options}
        make = _maker(spec, o, v, path)
        if make is not None:
            out.append(Perturber(spec.name, family, make))
    if v:
        raise InvalidArgument(v)
    return out


def _maker(spec: Spec, o: dict[str, str], v: list[FieldViolation], path: str) -> Callable[[], Text] | None:
    opt = f"{path}.options"
    name = spec.name
    if name == "typos":
        prob = _number(v, f"{opt}['prob']", o["prob"], 0, 1)
        return lambda: lambda t, r: texts.typos(t, r, prob)
    if name == "space":
        k = int(_number(v, f"{opt}['max_spaces']", o["max_spaces"], 1, 100, integer=True) or 1)
        return lambda: lambda t, r: texts.space(t, r, k)
    if name == "extra_space":
        k = int(_number(v, f"{opt}['num_spaces']", o["num_spaces"], 0, 100, integer=True) or 0)
        return lambda: lambda t, r: texts.extra_space(t, r, k)
    if name in ("lowercase", "contraction", "expansion"):
        fn: Text = getattr(texts, name)
        return lambda: fn
    prob = _number(v, f"{opt}['prob']", o["prob"], 0, 1)
    if name == "gender":
        mode = _choice(v, f"{opt}['mode']", o["mode"], ("pronouns", "terms"))
        source = _choice(v, f"{opt}['source']", o["source"], texts.GENDERS)
        target = _choice(v, f"{opt}['target']", o["target"], texts.GENDERS)
        both = _flag(v, f"{opt}['both']", o["both"])
        if source == target:
            v.append(FieldViolation(f"{opt}['target']", "must differ from source"))
        if v:
            return None
        gmap = texts.gender_mapping(mode, source, target, both)
        return lambda: lambda t, r: texts.gender(t, r, gmap, prob)
    if name == "person_name":
        races = sorted(texts.person_names()["race"])
        source = _choice(v, f"{opt}['source']", o["source"], races)
        target = _choice(v, f"{opt}['target']", o["target"], races)
        keep = _flag(v, f"{opt}['preserve_gender']", o["preserve_gender"])
        if v:
            return None
        return lambda: texts.NameSwap(source, target, prob, keep)
    mapping = spec.word_mapping
    if not mapping and o["mapping"]:
        try:
            mapping = load_mapping(o["mapping"])
        except (OSError, ValueError) as exc:
            v.append(FieldViolation(f"{opt}['mapping']", f"cannot read the mapping file: {exc}"))
            return None
    if not mapping or any(not alts for alts in mapping.values()):
        v.append(
            FieldViolation(f"{path}.word_mapping", "dialect needs a word mapping: word -> [alternatives], none empty")
        )
        return None
    lowered = {k.lower(): list(alts) for k, alts in mapping.items()}
    return lambda: lambda t, r: texts.dialect(t, r, lowered, prob)


def rng_for(instance_id: str, seed: int | None) -> Random:
    return Random(instance_id if seed is None else str(seed) + instance_id)


CLEARED = ("output", "confidence", "choice_probabilities", "correct", "timing", "produced_at")


def variant(p: pb.Prediction, perturber: Perturber, seed: int | None) -> pb.Prediction | None:
    """The perturbed copy of p, or None when the perturbation changes nothing."""
    rng = rng_for(p.id, seed)
    fn = perturber.make()
    refs = list(p.references)
    if perturber.name in PERTURBS_REFERENCES:  # references first, then the input: HELM's order
        refs = [fn(ref, rng) for ref in refs]
    text = fn(p.input, rng)
    if text == p.input and refs == list(p.references):
        return None
    out = pb.Prediction()
    out.CopyFrom(p)
    for name in CLEARED:
        out.ClearField(name)
    out.id = f"{p.id}~{perturber.name}"
    out.input = text
    del out.references[:]
    out.references.extend(refs)
    if out.HasField("ranking"):
        _clear_ranking(out.ranking)
    out.perturbation.name, out.perturbation.family, out.perturbation.original_id = (
        perturber.name,
        perturber.family,
        p.id,
    )
    return out


def _clear_ranking(r: pb.Ranking) -> None:
    """A ranking task's variant: the query is perturbed; the model's ranking answered the original
    query, so it is cleared like `output`; the candidates, their judgments and retriever ranks stay
    (HELM perturbs MS MARCO's query and keeps its passages' relevance)."""
    r.ClearField("order")
    r.ClearField("form")
    for d in r.documents:
        for name in ("score", "model_output", "logprob"):
            d.ClearField(name)


def perturb(
    predictions: Iterable[pb.Prediction],
    perturbers: list[Perturber],
    seed: int | None = None,
    include_originals: bool = False,
) -> tuple[list[pb.Prediction], int]:
    """Variants of every prediction (after it, when originals are included), and how many were unchanged."""
    out: list[pb.Prediction] = []
    unchanged = 0
    for p in predictions:
        if include_originals:
            out.append(p)
        for perturber in perturbers:
            v = variant(p, perturber, seed)
            if v is None:
                unchanged += 1
            else:
                out.append(v)
    return out, unchanged


def parse_specs(text: str) -> list[Spec]:
    """The CLI's --with: "typos:prob=0.05,lowercase,dialect:mapping=sae_aae.json"."""
    specs = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, *pairs = item.split(":")
        options = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            options[key.strip()] = value.strip()
        specs.append(Spec(name.strip(), options))
    return specs
