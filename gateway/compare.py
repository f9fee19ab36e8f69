"""CompareProfiles: two profiles cell by cell, each cell tested by what is stored for it, the p-values
adjusted over every cell tested, and a decision that fails only on a significant worsening beyond the
margin and says "not enough data" rather than passing.

The tests are holistic/compare/significance.py's (the clients' `compare` and the dashboard ask this RPC):
a cell with an interval is tested from its interval and count (holistic/compare/profiles.py); a corpus-level
cell (no interval: classification F1, ECE, a gap) from the bucket bootstrap of the stored time
buckets (holistic/compare/bootstrap.py); two models' shared instances per slot (gateway/paired.py).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from gateway import paired
from gateway.cell_bootstrap import bootstrap_errors, cells_of, segment_errors, segment_refs
from gateway.profiles import ProfileReader, Stored, WindowSpec
from gateway.validation import NAME_RE
from holistic.compare import bootstrap as bucket_bootstrap
from holistic.compare import margin as margin_rule
from holistic.compare import significance
from holistic.compare.profiles import Change, compare, dimension_name, previous_range
from holistic.errors import FieldViolation, InvalidArgument
from holistic.families import Family, paired_direction
from holistic.families.registry import UnknownFamily, load_family
from holistic.profile.fold import HELM_AXES, axis_name
from holistic.stats.mergeable import Folded
from holistic.tenancy.tenants import internal_model
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import profile_pb2 as pp

MAX_FAIL_ON = 100
METHODS = {
    es.MULTIPLICITY_UNSPECIFIED: significance.HOLM,
    es.MULTIPLICITY_HOLM: significance.HOLM,
    es.MULTIPLICITY_BENJAMINI_HOCHBERG: significance.BH,
}


def _check(request: es.CompareProfilesRequest) -> tuple[float, str, list[str]]:
    """The level, the multiplicity method and the cells judged; INVALID_ARGUMENT naming a bad field."""
    bad = []
    for field in ("model", "other_model"):
        name = getattr(request, field)
        if (name or field == "model") and not NAME_RE.fullmatch(name):
            bad.append(FieldViolation(field, "is required" if not name else "is not a valid model name"))
    if not (math.isfinite(request.margin) and request.margin >= 0):
        bad.append(FieldViolation("margin", f"must be a finite number >= 0, got {request.margin}"))
    if not (request.level == 0 or 0 < request.level <= 0.5):
        bad.append(FieldViolation("level", f"must be in (0, 0.5] (0: 0.05), got {request.level}"))
    if request.multiplicity not in METHODS:
        bad.append(FieldViolation("multiplicity", f"unknown method {request.multiplicity}"))
    if len(request.fail_on) > MAX_FAIL_ON:
        bad.append(FieldViolation("fail_on", f"names at most {MAX_FAIL_ON} cells, got {len(request.fail_on)}"))
    for i, name in enumerate(request.fail_on[:MAX_FAIL_ON]):
        if not name or len(name) > 200:
            bad.append(FieldViolation(f"fail_on[{i}]", "must be a cell's name of 1 to 200 characters"))
    if request.WhichOneof("window") is None and not request.other_model:
        bad.append(FieldViolation("preset", "comparing a model with itself needs a window other than all time"))
    if bad:
        raise InvalidArgument(bad)
    return request.level or significance.LEVEL, METHODS[request.multiplicity], list(request.fail_on) or ["any"]


def _check_names(fail_on: Sequence[str], *profiles: pp.Profile) -> None:
    """A name in fail_on is an axis (HELM's seven, or one the profiles have), "any", or FAMILY/METRIC:
    a misspelt axis is INVALID_ARGUMENT rather than "not enough data"."""
    axes = sorted({axis_name(k) for k in HELM_AXES} | {dimension_name(d) for p in profiles for d in p.dimensions})
    bad = [
        FieldViolation(f"fail_on[{i}]", f"unknown axis {name}; use {', '.join(axes)}, any, or FAMILY/METRIC")
        for i, name in enumerate(fail_on)
        if name != "any" and "/" not in name and name not in axes
    ]
    if bad:
        raise InvalidArgument(bad)


def _family_of(name: str, msg: pp.Dimension | pp.Metric) -> str:
    return msg.family if isinstance(msg, pp.Dimension) else name.partition("/")[0]


def _direction(msg: pp.Dimension | pp.Metric) -> int:
    if isinstance(msg, pp.Dimension):
        return 1
    return -1 if msg.lower_is_better else 0 if msg.unit else 1


class Comparer:
    def __init__(self, reader: ProfileReader, families: Callable[[str], Family] | None = None) -> None:
        self.reader = reader
        self.families: Callable[[str], Family] = families or reader.families or load_family

    def _fold(self, stored: Stored, folded: dict[str, Folded]) -> pp.Profile:
        return stored.fold(folded, self.reader.settings, self.families)

    async def compare(self, request: es.CompareProfilesRequest, tenant: str) -> es.CompareProfilesResponse:
        level, method, judged = _check(request)
        spec = WindowSpec.from_request(request)
        if request.other_model:
            before, before_stored = await self.reader.stored(request.model, spec, tenant)
            after, after_stored = await self.reader.stored(request.other_model, spec, tenant)
        else:
            after, after_stored = await self.reader.stored(request.model, spec, tenant)
            span = previous_range(after.window)
            assert span is not None  # a window other than all time resolves to a range
            start_ns, end_ns = round(span[0] * 1e9), round(span[1] * 1e9)
            previous = WindowSpec(pp.WINDOW_PRESET_UNSPECIFIED, span[0], span[1], (start_ns, end_ns))
            before, before_stored = await self.reader.stored(request.model, previous, tenant)
        _check_names(request.fail_on, before, after)
        loop = asyncio.get_running_loop()
        changes = compare(after, before)
        tests: dict[str, significance.Test] = {}
        why: dict[str, str] = {}
        cells_before, cells_after = cells_of(before), cells_of(after)
        corpus: dict[str, str] = {}
        for c in changes:
            msg = cells_after[c.name]
            if c.p is not None and c.diff_lower is not None and c.diff_upper is not None:
                tests[c.name] = significance.Test(c.delta or 0.0, c.diff_lower, c.diff_upper, c.p, c.method)
            elif c.before is not None and c.after is not None and _direction(msg):
                corpus[c.name] = _family_of(c.name, msg)
        if corpus:
            refs = segment_refs(after)  # a segment cell: its own buckets, folded alone (gateway/cell_bootstrap.py)
            plain = {n: fam for n, fam in corpus.items() if n not in refs}
            segmented = {n: refs[n] for n in corpus if n in refs}
            errors = []
            for s in (before_stored, after_stored):
                errors.append(await loop.run_in_executor(self.reader.folds, bootstrap_errors, s, plain, self._fold))
                errors[-1] |= await loop.run_in_executor(
                    self.reader.folds, segment_errors, s, segmented, self.families, self.reader.settings
                )
            for c in changes:
                if c.name not in corpus:
                    continue
                if c.name in errors[0] and c.name in errors[1]:
                    t = significance.welch_from_se(
                        c.before or 0.0, c.after or 0.0, errors[0][c.name], errors[1][c.name]
                    )
                    if t is not None:
                        tests[c.name] = t
                        continue
                buckets = "time buckets with this segment's predictions" if c.name in refs else "non-empty time buckets"
                why[c.name] = (
                    f"no interval, and no bootstrap: fewer than {bucket_bootstrap.MIN_BUCKETS} {buckets} "
                    "on a side (name a window of minutes with more spread), or a value some draws do not give"
                )
        pairs = await self._paired(request, before_stored, after_stored, tenant) if request.other_model else []
        for cell in pairs:
            if cell.test is not None:
                tests[cell.name] = cell.test
        return respond(
            before,
            after,
            changes,
            pairs,
            tests,
            why,
            (cells_before, cells_after),
            level,
            method,
            request.margin,
            judged,
        )

    async def _paired(
        self, request: es.CompareProfilesRequest, before: Stored, after: Stored, tenant: str
    ) -> list[paired.PairedCell]:
        settings = self.reader.settings
        r, keys = self.reader.r, self.reader.keys
        days = paired.live_days(after.now, settings.instance_ttl_s)
        families = sorted(before.buckets.keys() & after.buckets.keys())
        a, b = internal_model(tenant, request.model), internal_model(tenant, request.other_model)
        size_a, size_b = await paired.sizes(r, keys, a, families, days), await paired.sizes(r, keys, b, families, days)
        families = [
            f for f in families if size_a[f] and size_b[f] and paired.within_bounds(settings, size_a[f], size_b[f])
        ]
        if not families:
            return []
        resolved = after.resolved
        span = None if resolved.all_time else (resolved.start_s, resolved.end_s)
        cost = sum(size_a[f] + size_b[f] for f in families) / paired.INSTANCES_PER_BUCKET
        out: list[paired.PairedCell] = []
        async with self.reader.limits.read(tenant, False, cost):
            for fam in families:
                sa = await paired.states(r, keys, a, fam, days, span)  # type: ignore[arg-type]
                sb = await paired.states(r, keys, b, fam, days, span)  # type: ignore[arg-type]
                family = self._family(fam)
                out += [
                    replace(c, direction=0 if family is None else paired_direction(family, c.slot))
                    for c in paired.cells(fam, sa, sb)
                ]
        return out

    def _family(self, name: str) -> Family | None:
        """The family's declaration; None where this gateway does not have it installed."""
        try:
            return self.families(name)
        except UnknownFamily:
            return None


def respond(
    before: pp.Profile,
    after: pp.Profile,
    changes: list[Change],
    pairs: list[paired.PairedCell],
    tests: dict[str, significance.Test],
    why: dict[str, str],
    cells: tuple[dict[str, pp.Dimension | pp.Metric], dict[str, pp.Dimension | pp.Metric]],
    level: float,
    method: str,
    margin: float,
    judged: list[str],
) -> es.CompareProfilesResponse:
    """The response: every cell with its adjusted p-value and verdict (two-sided, adjusted over every cell
    tested), its margin test (holistic/compare/margin.py, adjusted over the judged cells), and the
    decision over `judged`."""
    names = list(tests)
    adjusted = dict(zip(names, significance.ADJUSTMENTS[method]([tests[n].p for n in names]), strict=True))
    out = es.CompareProfilesResponse(before=before, after=after, multiplicity=method, level=level, margin=margin)
    dims = {dimension_name(d) for p in (before, after) for d in p.dimensions if d.HasField("score")}
    chosen: list[str] = []
    for name in judged:  # "any": every axis scored on a side ("any" itself when none is)
        chosen += (sorted(dims) or ["any"]) if name == "any" else [name]
    chosen = list(dict.fromkeys(chosen))
    directions = {c.name: _direction(cells[1][c.name]) for c in changes} | {p.name: p.direction for p in pairs}
    one_sided = {n: (tests[n], directions[n]) for n in chosen if n in tests and directions.get(n)}
    _, p_margin_adjusted, failing = margin_rule.worse(one_sided, margin, level, method)
    for c in changes:
        msg_after, msg_before = cells[1][c.name], cells[0].get(c.name)
        cell = out.cells.add(name=c.name, kind=c.kind, matters=c.matters, why=why.get(c.name, c.why))
        cell.lower_is_better = isinstance(msg_after, pp.Metric) and msg_after.lower_is_better
        cell.after_count = msg_after.count
        cell.before_count = msg_before.count if msg_before is not None else 0
        if c.before is not None:
            cell.before = c.before
        if c.after is not None:
            cell.after = c.after
        if c.delta is not None:
            cell.difference = c.delta
        _judge(cell, tests.get(c.name), adjusted.get(c.name), level, directions[c.name], margin)
    for p in pairs:
        cell = out.cells.add(name=p.name, kind="paired", before=p.before, after=p.after, difference=p.after - p.before)
        cell.before_count = cell.after_count = p.count
        cell.lower_is_better = p.direction < 0
        cell.why = "the instances both models scored"
        _judge(cell, p.test, adjusted.get(p.name), level, p.direction, margin)
    by_name = {c.name: c for c in out.cells}
    for name, p_adj in p_margin_adjusted.items():
        by_name[name].p_margin_adjusted = p_adj
    for name in chosen:  # a named cell the margin test cannot judge (no value, no test, no direction): not a pass
        cell = by_name.get(name)
        if cell is None or name not in p_margin_adjusted:
            out.not_enough_data.append(name)
        elif name in failing:
            out.worse.append(name)
    if out.worse:
        out.decision = es.DECISION_WORSE
        out.summary = f"worse: {', '.join(out.worse)} got significantly worse beyond the margin {margin:g} " \
            f"(one-sided margin test, {method}-adjusted p below {level:g})"  # fmt: skip
    elif out.not_enough_data:
        out.decision = es.DECISION_NOT_ENOUGH_DATA
        out.summary = f"not enough data to decide: {', '.join(out.not_enough_data)} has no value on a side, " \
            "no test, or no better or worse"  # fmt: skip
    else:
        out.decision = es.DECISION_PASS
        out.summary = f"pass: none of {', '.join(chosen)} got significantly worse beyond the " \
            f"margin {margin:g} (one-sided margin test, {method}-adjusted p, level {level:g})"  # fmt: skip
    return out


def _judge(
    cell: es.CellComparison,
    t: significance.Test | None,
    p_adjusted: float | None,
    level: float,
    direction: int,
    margin: float,
) -> None:
    if not (cell.HasField("before") and cell.HasField("after")):
        cell.verdict = es.VERDICT_ONE_SIDED
        return
    if t is None or p_adjusted is None:
        cell.verdict = (
            es.VERDICT_NO_DIRECTION if direction == 0 and cell.kind != "paired" else es.VERDICT_NOT_ENOUGH_DATA
        )
        return
    cell.lower, cell.upper, cell.p, cell.p_adjusted, cell.test = t.lower, t.upper, t.p, p_adjusted, t.method
    p_margin = margin_rule.margin_p(t, direction, margin)
    if p_margin is not None:
        cell.p_margin = p_margin
    if p_adjusted >= level:
        cell.verdict = es.VERDICT_NO_SIGNIFICANT_CHANGE
    elif direction == 0:
        cell.verdict = es.VERDICT_CHANGED
    else:
        cell.verdict = es.VERDICT_BETTER if (t.difference > 0) == (direction > 0) else es.VERDICT_WORSE
