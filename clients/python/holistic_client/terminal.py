"""Consoles and tables for the terminal: nothing a user wrote is markup, nothing is ever cut.

Printed to a file or a pipe, output has no width limit (a table is as wide as its content); in a
narrow terminal, cells fold onto more lines rather than end in an ellipsis.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

UNLIMITED = 100_000  # columns: wider than any table, so nothing folds when not a terminal


def console(stderr: bool = False) -> Console:
    """A console for this moment's stdout/stderr (a test runner may swap them)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(file=stream, soft_wrap=False)
    return Console(file=stream, width=UNLIMITED, soft_wrap=True)


def table(*columns: str, right: tuple[str, ...] = (), **kwargs: Any) -> Table:
    """A table whose every column folds long words instead of cutting them to `name…`."""
    t = Table(**kwargs)
    for col in columns:
        t.add_column(col, overflow="fold", justify="right" if col in right else "left")
    return t


def text(value: object) -> str:
    """User text (a model, scenario or metric name, a reason) as itself: `[x=y]` stays literal."""
    return escape(str(value))


def num(x: float, spec: str = ".4g") -> str:
    """A number without float noise: |x| below 1e-12 prints as 0."""
    return format(0.0 if abs(x) < 1e-12 else x, spec)


def count(n: int, word: str) -> str:
    """`1 batch`, `3 batches`, `2 summaries`, `1,000 predictions`."""
    if n == 1:
        return f"1 {word}"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return f"{n:,} {word[:-1]}ies"
    return f"{n:,} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{n:,} {word}s"
