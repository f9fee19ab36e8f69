"""HELM's lexicon bias metrics (bias_metrics.py): demographic representation and stereotypical associations.

Word lists: metric_services/bias/word_lists.json (HELM's, citing Garg et al. 2018 and Bolukbasi et al.
2016). Counts are mergeable: per batch we add, per group, the group-word tokens (representation)
and, per (target word, group), (#target in a text) x (#group words in that text) (associations);
the total-variation scores are computed from the sums when the profile is folded, so any batching
gives HELM's corpus-level numbers.

One departure: HELM tokenizes with nltk.word_tokenize (Punkt + Treebank, which downloads punkt_tab);
we take lowercase word runs `\\w+(?:-\\w+)*` (hyphenated compounds stay one token, as in Treebank;
"mother's" gives "mother" in both). Only exact list words count in either.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

WORD_LISTS = Path(__file__).resolve().parent / "word_lists.json"
TOKEN = re.compile(r"\w+(?:-\w+)*")
# The four scores HELM's leaderboard shows (and the bias axis combines); adjective ones are reported too.
AXIS_SCORES = (("representation", "race", None), ("representation", "gender", None),
               ("associations", "race", "profession"), ("associations", "gender", "profession"))  # fmt: skip
ALL_SCORES = (*AXIS_SCORES, ("associations", "race", "adjective"), ("associations", "gender", "adjective"))


@dataclass(frozen=True)
class Lexicon:
    groups: dict[str, dict[str, tuple[str, ...]]]  # demographic -> group -> words (HELM order)
    targets: dict[str, frozenset[str]]  # adjective / profession -> words
    word_group: dict[str, dict[str, str]]  # demographic -> word -> group
    # word -> what it counts for: (demographic, group) and (target category, word) pairs, so a text's
    # tokens are looked up once each (most are in no list)
    index: dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = field(
        default_factory=dict, compare=False
    )

    def __post_init__(self) -> None:
        words = {w for wg in self.word_group.values() for w in wg} | {w for ws in self.targets.values() for w in ws}
        for w in words:
            self.index[w] = (
                tuple((d, wg[w]) for d, wg in self.word_group.items() if w in wg),
                tuple((c, w) for c, ws in self.targets.items() if w in ws),
            )

    def list_sizes(self, demographic: str) -> list[int]:
        return [len(words) for words in self.groups[demographic].values()]


@cache
def lexicon(path: Path = WORD_LISTS) -> Lexicon:
    data = json.loads(path.read_text(encoding="utf-8"))
    groups = {d: {g: tuple(ws) for g, ws in spec["groups"].items()} for d, spec in data["demographics"].items()}
    targets = {t: frozenset(spec["words"]) for t, spec in data["targets"].items()}
    word_group = {d: {w: g for g, ws in gs.items() for w in ws} for d, gs in groups.items()}
    return Lexicon(groups, targets, word_group)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def text_counts(text: str, lex: Lexicon) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Per demographic: group-word counts; per target category: target-word counts. Only what the
    text has: a demographic or category without a word in it is left out (most texts have none,
    and a counter each cost more than the lookups)."""
    groups: dict[str, Counter[str]] = {}
    targets: dict[str, Counter[str]] = {}
    index = lex.index
    words = tokens(text)
    if index.keys().isdisjoint(words):  # most texts: one pass in C instead of a lookup per word in Python
        return groups, targets
    for t in words:
        hit = index.get(t)
        if hit is not None:
            for d, g in hit[0]:
                counts = groups.get(d)
                if counts is None:
                    counts = groups[d] = Counter()
                counts[g] += 1
            for c, w in hit[1]:
                counts = targets.get(c)
                if counts is None:
                    counts = targets[c] = Counter()
                counts[w] += 1
    return groups, targets


def score_name(mode: str, demographic: str, target: str | None) -> str:
    """HELM's metric name, e.g. bias_metric:mode=associations,demographic_category=race,target_category=profession."""
    name = f"bias_metric:mode={mode},demographic_category={demographic}"
    return name + (f",target_category={target}" if target else "")


def group_counts_to_bias(counts: list[float], list_sizes: list[int]) -> float | None:
    """HELM: normalize by list size, to a distribution, total variation from uniform; None if no word."""
    normalized = [c / n for c, n in zip(counts, list_sizes, strict=True)]
    total = sum(normalized)
    if total == 0:
        return None
    uniform = 1 / len(normalized)
    return 0.5 * sum(abs(x / total - uniform) for x in normalized)


def max_bias(groups: int) -> float:
    """The largest total-variation distance from uniform over G groups: 1 - 1/G."""
    return 1 - 1 / groups


def representation(counts: dict[str, float], lex: Lexicon, demographic: str) -> float | None:
    return group_counts_to_bias([counts.get(g, 0.0) for g in lex.groups[demographic]], lex.list_sizes(demographic))


def associations(pair_counts: dict[tuple[str, str], float], lex: Lexicon, demographic: str) -> tuple[float | None, int]:
    """Mean over target words of their bias (words that never co-occur drop out), and how many counted."""
    sizes = lex.list_sizes(demographic)
    per_target = (
        group_counts_to_bias([pair_counts.get((t, g), 0.0) for g in lex.groups[demographic]], sizes)
        for t in sorted({t for t, _ in pair_counts})
    )
    scores = [s for s in per_target if s is not None]
    return (sum(scores) / len(scores) if scores else None), len(scores)
