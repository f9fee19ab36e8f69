"""The grammar of statistics field names: one place that builds them and one that reads them back.

A field name is parts joined by SEP: `key("mmlu", "ref", "exact_match", "sum")` is
"mmlu|ref|exact_match|sum". Families build every field with `key` and read folded fields through
`Fields` (holistic/stats.py's `Folded` is one), so no fold cuts names apart with string tests:

- `scope(*parts)`: the fields under a prefix, the prefix cut off (a `Fields` again);
- `names(*parts, having=leaf)`: the distinct parts right under a prefix, only those with a given
  leaf field (e.g. the scenarios that have "<scenario>|n");
- `groups(*parts)`: every field under a prefix grouped by its next part, in one pass (a fold that
  loops over scenarios);
- `num(*parts)`: one field's value, 0 when absent;
- `marked(marker)`: fields "<marker><value>" (e.g. "task:3", "k:812" sketch bins) as value -> number.

A part is a name (scenario, metric, tag "key=value", "p:<perturbation>") without SEP, except free
text (a classifier's label, a histogram bin) which may hold anything: it survives as the *last*
part of a key, read back as the rest of the name by `scope`/`marked`, or with
`names(..., having=leaf, free=True)` when it sits before a known leaf. Parts starting with "#" are
the core's (per-signature counts "#sig|...", instance bounds "#inst|..."): `groups` leaves them
out. The merge-rule suffixes ("|min", "|max", "|hist") and histogram bins are stats.py's; this
module changes no stored name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

SEP = "|"
CORE = "#"  # the first character of the core's own parts (holistic/stats.py, holistic/instances.py)
TAG = "="  # "<key>=<value>": a `groups` tag of a prediction


def key(*parts: str) -> str:
    """The field name of `parts`, joined by SEP."""
    return SEP.join(parts)


def tag(name: str, value: str) -> str:
    """One part for a group tag, "<name>=<value>"."""
    return f"{name}{TAG}{value}"


def split_tag(part: str) -> tuple[str, str]:
    """(name, value) of a tag part; the value is everything after the first "="."""
    name, _, value = part.partition(TAG)
    return name, value


class Fields(Mapping[str, float]):
    """A read-only field -> value map, read by parts (see the module docstring)."""

    __slots__ = ("_v",)

    def __init__(self, values: Mapping[str, float] | None = None) -> None:
        self._v: Mapping[str, float] = {} if values is None else values

    def __getitem__(self, field: str) -> float:
        return self._v[field]

    def __iter__(self) -> Iterator[str]:
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)

    def __contains__(self, field: object) -> bool:
        return field in self._v

    def get(self, field: str, default: float | None = None) -> float | None:  # type: ignore[override]
        return self._v.get(field, default)

    def num(self, *parts: str, default: float = 0.0) -> float:
        """The value of the field `key(*parts)`, `default` when absent."""
        return self._v.get(SEP.join(parts), default)

    def scope(self, *parts: str) -> Fields:
        """The fields under `key(*parts)`, with that prefix and its separator cut off."""
        prefix = SEP.join(parts) + SEP
        n = len(prefix)
        return Fields({k[n:]: v for k, v in self._v.items() if k.startswith(prefix)})

    def names(self, *parts: str, having: str | None = None, marker: str = "", free: bool = False) -> list[str]:
        """The distinct parts right under `key(*parts)` (all fields when no parts), sorted.

        having: only names with the field `key(*parts, name, having)` (`having` may itself be a key).
        marker: only names starting with it ("p:", "in:"), returned without it.
        free: the name is everything between the prefix and "|<having>", so free text holding SEP
        survives (a classifier label); needs `having`.
        """
        prefix = SEP.join(parts) + SEP if parts else ""
        n = len(prefix)
        found: set[str] = set()
        if free:
            if having is None:
                raise ValueError("names(free=True) needs the leaf field it ends with (having)")
            suffix = SEP + having
            for k in self._v:
                if k.startswith(prefix) and k.endswith(suffix) and len(k) > n + len(suffix):
                    found.add(k[n : -len(suffix)])
        else:
            for k in self._v:
                if k.startswith(prefix):
                    found.add(k[n:].partition(SEP)[0])
            if having is not None:
                found = {name for name in found if f"{prefix}{name}{SEP}{having}" in self._v}
        m = len(marker)
        return sorted(name[m:] for name in found if name.startswith(marker) and len(name) > m)

    def groups(self, *parts: str, marker: str = "") -> dict[str, Fields]:
        """Every field under `key(*parts)` with at least one more part, grouped in one pass by its next
        part (only those starting with `marker`, cut off; never the core's "#" parts): next part ->
        the rest, in field order."""
        prefix = SEP.join(parts) + SEP if parts else ""
        n, m = len(prefix), len(marker)
        out: dict[str, dict[str, float]] = {}
        for k, v in self._v.items():
            if not k.startswith(prefix):
                continue
            name, sep, rest = k[n:].partition(SEP)
            if sep and name.startswith(marker) and not name.startswith(CORE):
                out.setdefault(name[m:], {})[rest] = v
        return {name: Fields(fields) for name, fields in out.items()}

    def marked(self, marker: str) -> dict[str, float]:
        """Fields named "<marker><value>" as value -> number; the value is the rest of the name."""
        n = len(marker)
        return {k[n:]: v for k, v in self._v.items() if k.startswith(marker)}
