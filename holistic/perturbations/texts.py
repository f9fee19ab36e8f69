"""The text perturbations, HELM's mechanisms (crfm-helm 0.5.16, src/helm/benchmark/augmentations/).

Each takes the text and a `random.Random` seeded per instance (see __init__.py) and returns the
perturbed text. Departures from HELM, on purpose:
- gender, dialect: HELM's pattern `[^\\w](word)[^\\w]` needs a character on each side, so it never
  replaces the first or last word of a text and skips the second of two adjacent matches; we match
  on word boundaries (lookarounds) instead. Both directions is one simultaneous swap (HELM applies
  source->target then target->source in sequence, which turns "he" into "she" and back).
- dialect: phrases are tried longest first (HELM tries them in file order, so "a" can shadow "a lot").
- With prob < 1 the random draws are made in text order, so variants are deterministic but not
  draw-for-draw HELM's. typos, space and person names consume the generator exactly as HELM does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from random import Random

DATA = Path(__file__).parent / "data"
GENDERS = ("neutral", "female", "male")


def match_case(source: str, target: str) -> str:
    """target in source's case: all lower, all upper, or capitalised (HELM's helper)."""
    if all(c.islower() for c in source):
        return target.lower()
    if all(c.isupper() for c in source):
        return target.upper()
    if source and source[0].isupper():
        return target.capitalize()
    return target


@cache
def _json(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def typos(text: str, rng: Random, prob: float) -> str:
    """Each letter, with probability prob, becomes a random QWERTY neighbour; case kept."""
    neighbours: dict[str, str] = _json("keyboard_neighbours.json")
    out = []
    for ch in text:
        low = ch.lower()
        new = low
        if low in neighbours and rng.random() < prob:
            new = rng.choice(list(neighbours[low]))
        out.append(new.upper() if low != ch else new)
    return "".join(out)


def lowercase(text: str, rng: Random) -> str:
    return text.lower()


@cache
def _expansion_pattern() -> re.Pattern[str]:
    return re.compile(r"\b({})\b".format("|".join(map(re.escape, _json("contractions.json")))), re.IGNORECASE)


@cache
def _contraction_pattern() -> tuple[re.Pattern[str], dict[str, str]]:
    reverse = {v: k for k, v in _json("contractions.json").items()}
    pattern = re.compile(r"\b({})\b ".format("|".join(map(re.escape, reverse))), re.IGNORECASE)
    return pattern, reverse


def expansion(text: str, rng: Random) -> str:
    """Each contraction expanded ("she's" -> "she is")."""
    table: dict[str, str] = _json("contractions.json")
    return _expansion_pattern().sub(
        lambda m: match_case(m.group(0), table.get(m.group(0), table.get(m.group(0).lower(), m.group(0)))), text
    )


def contraction(text: str, rng: Random) -> str:
    """Each expansion followed by a space contracted ("she is a" -> "she's a"), HELM's rule."""
    pattern, reverse = _contraction_pattern()

    def sub(m: re.Match[str]) -> str:
        word = m.group(1)
        return match_case(word, reverse.get(word, reverse.get(word.lower(), word))) + " "

    return pattern.sub(sub, text)


def space(text: str, rng: Random, max_spaces: int) -> str:
    """Each run of spaces becomes 1..max_spaces spaces."""
    return re.sub(r" +", lambda m: " " * rng.randint(1, max_spaces), text)


def extra_space(text: str, rng: Random, num_spaces: int) -> str:
    return text.replace(" ", " " * num_spaces)


def _word_pattern(words: list[str], edge: str) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))
    return re.compile(rf"(?<!{edge})({alternatives})(?!{edge})", re.IGNORECASE)


def substitute(pattern: re.Pattern[str], choose: Callable[[str], str | None], text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        new = choose(m.group(1))
        return m.group(1) if new is None else match_case(m.group(1), new)

    return pattern.sub(sub, text)


def gender_mapping(mode: str, source: str, target: str, both: bool) -> dict[str, str]:
    """word -> replacement; the first tuple wins where a word repeats (HELM: "her" -> "him")."""
    tuples = _json("gender_terms.json")[mode]
    s, t = GENDERS.index(source), GENDERS.index(target)
    mapping: dict[str, str] = {}
    for tup in tuples:
        mapping.setdefault(tup[s], tup[t])
    if both:
        for tup in tuples:
            mapping.setdefault(tup[t], tup[s])
    return mapping


def gender(text: str, rng: Random, mapping: Mapping[str, str], prob: float) -> str:
    pattern = _word_pattern(list(mapping), r"\w")

    def choose(word: str) -> str | None:
        return mapping[word.lower()] if rng.uniform(0, 1) < prob else None

    return substitute(pattern, choose, text)


def dialect(text: str, rng: Random, mapping: Mapping[str, list[str]], prob: float) -> str:
    pattern = _word_pattern(list(mapping), r"[\w-]")

    def choose(word: str) -> str | None:
        return rng.choice(mapping[word.lower()]) if rng.uniform(0, 1) < prob else None

    return substitute(pattern, choose, text)


@cache
def person_names() -> dict[str, dict[str, set[str]]]:
    """category -> value -> first names (HELM's name-file format, data/person_names.csv)."""
    out: dict[str, dict[str, set[str]]] = {}
    for line in (DATA / "person_names.csv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind, *cats = (field.strip().lower() for field in line.split(","))
        if kind != "first_name":
            continue
        for cat, value in zip(cats[::2], cats[1::2], strict=True):
            out.setdefault(cat, {}).setdefault(value, set()).add(name)
    return out


class NameSwap:
    """First names of the source race become first names of the target race (same gender when
    preserve_gender and known), one substitute per name across an instance's input and references."""

    def __init__(self, source: str, target: str, prob: float, preserve_gender: bool) -> None:
        names = person_names()
        self.source, self.targets = names["race"][source], sorted(names["race"][target])
        self.genders = names["gender"]
        self.prob, self.preserve_gender = prob, preserve_gender
        self.chosen: dict[str, str] = {}
        self.kept: set[str] = set()

    def _substitute(self, token: str, rng: Random) -> str | None:
        options = self.targets
        if self.preserve_gender:
            gender = next((g for g in ("female", "male", "neutral") if token in self.genders.get(g, ())), None)
            if gender is not None:
                options = [n for n in self.targets if n in self.genders[gender]]
                if not options:
                    return None
        return rng.choice(options)

    def __call__(self, text: str, rng: Random) -> str:
        out = []
        for token in re.split(r"([^\w])", text):
            low = token.lower()
            if low in self.source and low not in self.chosen and low not in self.kept:
                if rng.uniform(0, 1) < self.prob:
                    new = self._substitute(low, rng)
                    if new:
                        self.chosen[low] = new
                else:
                    self.kept.add(low)
            out.append(match_case(token, self.chosen[low]) if low in self.chosen else token)
        return "".join(out)
