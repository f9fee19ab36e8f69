"""The grammar of statistics field names: one place that builds them and one that reads them back.

A field name is parts joined by SEP: `key("mmlu", "ref", "exact_match", "sum")` is
"mmlu|ref|exact_match|sum". Families build every field with `key` and read folded fields through
`Fields` (holistic/stats/mergeable.py's `Folded` is one), so no fold cuts names apart with string tests:

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

Typed names (`Count`, `Sum`, `SumSq`, `Quantity`) are the same strings built from what they mean, a
metric in a scenario and group: `Count("scored", scenario="qa")` *is* the field "scenario=qa|scored|n",
so Stats writes it and Redis stores it as any other name, and a fold reads `stats[Count("scored",
scenario=s)]`, `stats.moments(Quantity("f1", scenario=s))` and `stats.find(Count("scored", scenario=ANY))`
instead of assembling parts. The built-in families keep their older part layouts (their stored names
are a compatibility promise); a new family should use the typed names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar, NamedTuple, Self

SEP = "|"
CORE = "#"  # the first character of the core's own parts (holistic/stats/mergeable.py, holistic/stats/instances.py)
TAG = "="  # "<key>=<value>": a `groups` tag of a prediction
SEGMENT_PREFIX = "#seg" + SEP  # "#seg|<key>|<cell>|<field>": a segment cell's field (holistic/stats/segments.py)


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


SCENARIO = "scenario"  # the tag name of a typed name's scenario part, "scenario=<name>"
ANY = "\x00any"  # a `find` pattern's wildcard for a scenario or a group value


class Quantity(str):
    """A typed statistic name: `metric`, optionally in a scenario and a group (a (name, value) tag);
    the string is the stored field. Subclasses add the leaf that says which statistic it is."""

    leaf: ClassVar[str] = ""
    metric: str
    scenario: str | None
    group: tuple[str, str] | None

    def __new__(cls, metric: str, *, scenario: str | None = None, group: tuple[str, str] | None = None) -> Self:
        if not metric or SEP in metric or TAG in metric or metric.startswith(CORE):
            raise ValueError(f"a metric name holds no {SEP!r} or {TAG!r} and does not start with {CORE!r}: {metric!r}")
        parts = [] if scenario is None else [tag(SCENARIO, _part(scenario, "scenario"))]
        if group is not None:
            name, value = group
            if not name or TAG in name or name == SCENARIO:
                raise ValueError(f"a group name is not empty, holds no {TAG!r} and is not {SCENARIO!r}: {name!r}")
            parts.append(tag(_part(name, "group name"), _part(value, "group value")))
        parts.append(metric)
        if cls.leaf:
            parts.append(cls.leaf)
        self = super().__new__(cls, key(*parts))
        self.metric, self.scenario, self.group = metric, scenario, group
        return self

    def __repr__(self) -> str:
        extra = "" if self.scenario is None else f", scenario={self.scenario!r}"
        extra += "" if self.group is None else f", group={self.group!r}"
        return f"{type(self).__name__}({self.metric!r}{extra})"

    def __reduce__(self) -> tuple:  # str's own pickling would lose the parts
        return _rebuild, (type(self), self.metric, self.scenario, self.group)

    @property
    def quantity(self) -> Quantity:
        """The name without its leaf: the prefix of the quantity's fields (a sketch's, its moments')."""
        return Quantity(self.metric, scenario=self.scenario, group=self.group)

    @property
    def count(self) -> Count:
        return Count(self.metric, scenario=self.scenario, group=self.group)

    @property
    def sum(self) -> Sum:
        return Sum(self.metric, scenario=self.scenario, group=self.group)

    @property
    def sumsq(self) -> SumSq:
        return SumSq(self.metric, scenario=self.scenario, group=self.group)

    @classmethod
    def parse(cls, field: str) -> Quantity | None:
        """The typed name a stored field is, or None when it is not one of this kind."""
        parts = field.split(SEP)
        leaf = parts.pop() if cls.leaf else ""
        if leaf != cls.leaf or not parts:
            return None
        scenario = group = None
        if TAG in parts[0] and split_tag(parts[0])[0] == SCENARIO:
            scenario = split_tag(parts.pop(0))[1]
        if len(parts) == 2 and TAG in parts[0]:
            group = split_tag(parts.pop(0))
        if len(parts) != 1 or TAG in parts[0] or not parts[0] or parts[0].startswith(CORE):
            return None
        return cls(parts[0], scenario=scenario, group=group)


class Count(Quantity):
    """How many values of `metric` were seen (a quantity's "n")."""

    leaf = "n"


class Sum(Quantity):
    leaf = "sum"


class SumSq(Quantity):
    leaf = "sumsq"


class Totals(NamedTuple):
    """A quantity's count, sum and sum of squares, as `Stats.add_moments` keeps them."""

    n: float
    sum: float
    sumsq: float

    @property
    def mean(self) -> float:
        return self.sum / self.n if self.n else float("nan")


def _part(text: str, what: str) -> str:
    if SEP in text:
        raise ValueError(f"a {what} holds no {SEP!r}: {text!r}")
    return text


def _rebuild(cls: type[Quantity], metric: str, scenario: str | None, group: tuple[str, str] | None) -> Quantity:
    return cls(metric, scenario=scenario, group=group)


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

    def moments(self, quantity: Quantity) -> Totals:
        """A quantity's count, sum and sum of squares (zeros when absent)."""
        q = quantity.quantity
        return Totals(self._v.get(q.count, 0.0), self._v.get(q.sum, 0.0), self._v.get(q.sumsq, 0.0))

    def find(self, pattern: Quantity) -> list[Quantity]:
        """The stored names of `pattern`'s kind and metric, sorted, where a scenario or group value given as
        ANY matches any (and None only none): `find(Count("scored", scenario=ANY))` lists each scenario's."""
        kind = type(pattern)
        found = []
        for field in self._v:
            if not field.endswith(kind.leaf):
                continue
            typed = kind.parse(field)
            if typed is None or typed.metric != pattern.metric:
                continue
            if not _matches(pattern.scenario, typed.scenario):
                continue
            if _group_matches(pattern.group, typed.group):
                found.append(typed)
        return sorted(found)

    def marked(self, marker: str) -> dict[str, float]:
        """Fields named "<marker><value>" as value -> number; the value is the rest of the name."""
        n = len(marker)
        return {k[n:]: v for k, v in self._v.items() if k.startswith(marker)}


def _matches(wanted: str | None, got: str | None) -> bool:
    return got == wanted or (wanted == ANY and got is not None)


def _group_matches(wanted: tuple[str, str] | None, got: tuple[str, str] | None) -> bool:
    if wanted is None or got is None:
        return wanted is got
    return wanted[0] == got[0] and _matches(wanted[1], got[1])
