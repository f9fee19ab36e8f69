"""Extractive fragment statistics of a summary against its source (Grusky et al. 2018, Newsroom).

The greedy matching is Newsroom's `Fragments._match` as SummEval's `data_stats_utils.py` (which
HELM's DataStatsMetric uses) carries it: at each summary position, scan the source left to right;
at each token equal to the summary's, extend the match as far as it goes, keep it if strictly
longer than the best so far, and resume the scan *after* that match (so a longer match starting
inside it is not seen); then step the summary by the best length (or by 1 when nothing matched).
Here the scan visits only the source positions holding the summary's token, which is the same
walk without the positions that cannot start a match.

    coverage    = Σ|f| / |S|      share of summary tokens inside some extractive fragment
    density     = Σ|f|² / |S|     average squared fragment length per summary token
    compression = |A| / |S|       source tokens per summary token
Each is 0 when its denominator is 0 (an empty summary), as in HELM.

Tokenization (our departure, documented): HELM tokenizes with spaCy's `en_core_web_sm`, a model
that must be downloaded. We use a fixed regular expression, lowercased like HELM: a number with
inner "." or "," separators ("3.5", "1,000"), a run of Unicode word characters, or any other single
non-space character (punctuation, each emoji code point). So "don't" is three tokens here where
spaCy makes two ("do", "n't"); the fragment statistics move little because summary and source are
tokenized alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|\w+|\S")  # \S after \w+: any other non-space character


class FragmentStats(NamedTuple):
    coverage: float
    density: float
    compression: float
    summary_tokens: int
    source_tokens: int


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def fragment_lengths(summary: Sequence[str], source: Sequence[str]) -> list[int]:
    """Lengths of the greedy extractive fragments of summary in source, in summary order."""
    wanted = set(summary)
    positions: dict[str, list[int]] = {}
    for j, tok in enumerate(source):
        if tok in wanted:
            positions.setdefault(tok, []).append(j)
    n_s, n_a = len(summary), len(source)
    out: list[int] = []
    i = 0
    while i < n_s:
        best = 0
        resume = 0  # the scan's position in source: a match moves it past the matched span
        for j in positions.get(summary[i], ()):
            if j < resume:
                continue
            k = 1
            while i + k < n_s and j + k < n_a and summary[i + k] == source[j + k]:
                k += 1
            if k > best:
                best = k
            resume = j + k
        if best:
            out.append(best)
            i += best
        else:
            i += 1
    return out


def remove_braces(text: str) -> str:
    """HELM's SummarizationMetric._remove_braces: one leading "{" and one trailing "}" go (its
    summarization scenarios wrap some texts in braces); they would be tokens of their own here."""
    if text.startswith("{"):
        text = text[1:]
    if text.endswith("}"):
        text = text[:-1]
    return text


@lru_cache(maxsize=1024)
def _source_tokens(source_text: str) -> tuple[str, ...]:
    """A source's tokens, kept: every model's summary of an instance reads the same source."""
    return tuple(tokenize(remove_braces(source_text)))


def fragment_stats(summary_text: str, source_text: str) -> FragmentStats:
    """The statistics of the summary (already stripped of surrounding whitespace, as HELM strips the
    completion) against its source, both without HELM's surrounding braces."""
    summary, source = tokenize(remove_braces(summary_text)), _source_tokens(source_text)
    n = len(summary)
    if n == 0:
        return FragmentStats(0.0, 0.0, 0.0, 0, len(source))
    lengths = fragment_lengths(summary, source)
    return FragmentStats(
        coverage=sum(lengths) / n,
        density=sum(k * k for k in lengths) / n,
        compression=len(source) / n,
        summary_tokens=n,
        source_tokens=len(source),
    )
