"""`holistic compare`: a window against the one just before it, with the dashboard's "matters" rule,
and an exit status a CI job or a cron can gate on."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime

import click

from holistic.v1 import profile_pb2 as pp
from holistic_client.axes import axis_name, dimension_name
from holistic_client.cli import Connect, target_option, token_option
from holistic_client.client import WINDOWS, ClientError
from holistic_client.compare import Change, compare, previous_range, significantly_worse
from holistic_client.empty_window import newest_text, range_text
from holistic_client.terminal import console, num, table, text

AXES = [axis_name(k) for k in pp.DimensionKind.values() if k]
WORSE_STATUS = 1  # a chosen axis got significantly worse; 2 stays for errors
EMPTY_STATUS = 3  # nothing to judge: a --fail-on name without a value in either window (fails closed)


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _check_axes(names: list[str], profile: pp.Profile) -> None:
    """Names in --fail-on must be axes the profile has (HELM's seven, and plugin families' own)."""
    axes = [dimension_name(d) for d in profile.dimensions] or AXES
    unknown = [n for n in names if n not in axes and n != "any" and "/" not in n]
    if unknown:
        raise click.BadParameter(
            f"unknown axis {', '.join(unknown)}; use {', '.join(axes)}, any, or FAMILY/METRIC", param_hint="--fail-on"
        )


def regressions(changes: list[Change], fail_on: list[str], margin: float = 0.0) -> list[Change]:
    """Changes significantly worse (holistic_client/significance.py, Holm over the cells compared) by more
    than `margin`, named by --fail-on (`any`: every radar axis)."""
    chosen = set(fail_on)
    return [
        c
        for c in changes
        if significantly_worse(c, margin) and (c.name in chosen or ("any" in chosen and c.kind == "dimension"))
    ]


def evidence(c: Change) -> str:
    """`-0.5 (95% -0.62 to -0.38), p 1.2e-05, Holm 3.6e-05, Newcombe/two-proportion z`, or the rule it fell back on."""
    if c.p_holm is None or c.diff_lower is None or c.diff_upper is None:
        return c.why
    return (f"{num(c.delta or 0.0, '+.3g')} (95% {num(c.diff_lower, '+.3g')} to {num(c.diff_upper, '+.3g')}), "
            f"p {c.p:.2g}, Holm {c.p_holm:.2g}, {c.method}")  # fmt: skip


def _judged(name: str, profile: pp.Profile) -> bool:
    """Whether the profile has a value for a --fail-on name (`any`: at least one axis with a score)."""
    if "/" in name:
        family, _, metric = name.partition("/")
        return any(f.family == family and any(m.name == metric for m in f.metrics) for f in profile.families)
    scored = [dimension_name(d) for d in profile.dimensions if d.HasField("score")]
    return bool(scored) if name == "any" else name in scored


def unjudged(fail_on: list[str], current: pp.Profile, previous: pp.Profile) -> list[str]:
    """The --fail-on names that this window or the one before has no value for: nothing to judge."""
    return [n for n in fail_on if not (_judged(n, current) and _judged(n, previous))]


def utc_range(start: datetime, end: datetime) -> str:
    return f"{start:%Y-%m-%dT%H:%MZ}..{end:%Y-%m-%dT%H:%MZ}"


def changes_table(model: str, changes: list[Change], previous_n: int, show_all: bool) -> object:
    matters = sum(c.matters for c in changes)
    shown = changes if show_all else [c for c in changes if c.kind == "dimension" or c.matters]
    hidden = len(changes) - len(shown)
    caption = f"{hidden} more metrics moved less (--all shows them)" if hidden else ""
    title = f"{text(model)}: {matters} change{'' if matters == 1 else 's'} that matter"
    title += f" (previous window: {previous_n:,} predictions)"
    numeric = ("before", "now", "change", "p (Holm)")
    t = table("", *numeric, "why", right=numeric, title=title, caption=caption)
    for c in shown:
        verdict = ("worse: " if c.better is False else "better: " if c.better is True else "") if c.matters else ""
        style = "red" if c.matters and c.better is False else "green" if c.matters and c.better else ""
        why = f"[{style}]{verdict}{text(c.why)}[/{style}]" if style else f"{verdict}{text(c.why)}"
        t.add_row(
            text(c.name),
            "—" if c.before is None else num(c.before, ".4g"),
            "—" if c.after is None else num(c.after, ".4g"),
            "" if c.delta is None else num(c.delta, "+.4g") if c.delta else "0",
            "" if c.p_holm is None else f"{c.p_holm:.2g}",
            why,
        )
    return t


@click.command("compare")
@click.argument("models", nargs=-1, required=True)
@click.option(
    "--window", type=click.Choice(sorted(set(WINDOWS) - {"all"})), default="1h", show_default=True,
    help="This window, compared with the one of equal length just before it.",
)  # fmt: skip
@click.option(
    "--fail-on", "fail_on", default="", metavar="AXES",
    help="Exit 1 when one of these got significantly worse: comma-separated axes (accuracy,toxicity), "
    "`any` axis, or FAMILY/METRIC (efficiency/latency_p90); exit 3 when one has no value in either window.",
)  # fmt: skip
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="With --fail-on, a worsening must also be larger than this (in the cell's own unit) to fail.",
)
@click.option(
    "--allow-empty", is_flag=True,
    help="With --fail-on, pass (exit 0) instead of exit 3 when a window has nothing to judge.",
)  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="Every metric, not only the axes and what matters.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model: the changes and the regressions.")
@target_option
@token_option
def compare_command(
    models: tuple[str, ...], window: str, fail_on: str, margin: float, allow_empty: bool, show_all: bool,
    as_json: bool, target: str, connect: Connect,
) -> None:  # fmt: skip
    """Compare MODELS' last WINDOW with the window before it, as the dashboard does.

    With --fail-on it is a gate that fails closed: exit 1 when a named axis or metric got significantly
    worse (a test per cell, Holm's adjustment over every cell compared, 5 %; beyond --margin), else exit 3
    when one has no value in this window or the one before (unless --allow-empty)."""
    chosen = _names(fail_on)
    worse: list[tuple[str, Change]] = []
    empty: list[str] = []
    out = console()
    with connect(target) as client:
        for model in models:
            try:
                current = client.get_profile(model, window)
                span = previous_range(current.window)
                assert span is not None  # a preset other than all time resolves to a range
                start, end = (datetime.fromtimestamp(x, tz=UTC) for x in span)
                previous = client.get_profile(model, (start, end))
            except ClientError as exc:
                console(stderr=True).print(f"[red]error:[/red] {text(exc)}")
                sys.exit(2)
            _check_axes(chosen, current)
            changes = compare(current, previous)
            bad = regressions(changes, chosen, margin)
            worse += [(model, c) for c in bad]
            missing = unjudged(chosen, current, previous)
            if missing:
                empty.append(
                    f"{model}: nothing to judge for {', '.join(missing)}: the window {range_text(current.window)} "
                    f"has {current.counts.window_predictions:,} predictions, the one before "
                    f"({utc_range(start, end)}) {previous.counts.window_predictions:,}; "
                    + newest_text(current, time.time())
                )
            if as_json:
                record = {"model": model, "window": window, "previous": [start.isoformat(), end.isoformat()],
                          "changes": [asdict(c) for c in changes], "regressions": [c.name for c in bad],
                          "nothing_to_judge": missing}  # fmt: skip
                click.echo(json.dumps(record))
                continue
            out.print(changes_table(model, changes, previous.counts.window_predictions, show_all))
    for model, c in worse:
        console(stderr=True).print(
            text(f"{model}: {c.name} got significantly worse")
            + text(f" ({num(c.before or 0, '.4g')} → {num(c.after or 0, '.4g')}; {evidence(c)})")
        )
    for line in empty:
        console(stderr=True).print(text(line) + ("" if allow_empty else " (exit 3; --allow-empty passes)"))
    if worse:
        sys.exit(WORSE_STATUS)
    if empty and not allow_empty:
        sys.exit(EMPTY_STATUS)
