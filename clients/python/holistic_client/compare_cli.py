"""`holistic compare`: a window against the one just before it, with the dashboard's "matters" rule,
and an exit status a CI job or a cron can gate on."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime

import click
from google.protobuf.timestamp_pb2 import Timestamp

from holistic.v1 import profile_pb2 as pp
from holistic_client.axes import axis_name, dimension_name
from holistic_client.cli import Connect, target_option, token_option
from holistic_client.client import WINDOWS, Client, ClientError
from holistic_client.compare import Change, compare, previous_range
from holistic_client.terminal import console, num, table, text

AXES = [axis_name(k) for k in pp.DimensionKind.values() if k]
WORSE_STATUS = 1  # a chosen axis got significantly worse; 2 stays for errors
UNDECIDED_STATUS = 3  # a gate with nothing to judge (an empty window, an axis without data) fails closed


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


def regressions(changes: list[Change], fail_on: list[str]) -> list[Change]:
    """Changes that matter, are worse, and are named by --fail-on (`any`: every radar axis)."""
    chosen = set(fail_on)
    return [
        c
        for c in changes
        if c.matters and c.better is False and (c.name in chosen or ("any" in chosen and c.kind == "dimension"))
    ]


def _judged(name: str, profile: pp.Profile) -> bool:
    """Whether the profile has a value for a --fail-on name: an axis with a score, or FAMILY/METRIC."""
    if "/" in name:
        family, _, metric = name.partition("/")
        return any(f.family == family and any(m.name == metric for m in f.metrics) for f in profile.families)
    dims = [d for d in profile.dimensions if d.HasField("score")]
    return bool(dims) if name == "any" else any(dimension_name(d) == name for d in dims)


def undecided(chosen: list[str], current: pp.Profile, previous: pp.Profile) -> list[str]:
    """The --fail-on names either window has no value for: a gate cannot pass on them."""
    return [n for n in chosen if not (_judged(n, current) and _judged(n, previous))]


def _when(ts: Timestamp) -> str:
    return datetime.fromtimestamp(ts.seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ago(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"


def where_the_data_is(client: Client, model: str, now: float) -> str:
    """Where a model's predictions are, for a window that has none of what a gate needs."""
    total = client.get_profile(model, "all")
    if not total.counts.accepted_predictions:
        return "the service has accepted no predictions for this model"
    summary = next((m for m in client.list_models() if m.model == model), None)
    text_ = f"{total.counts.accepted_predictions:,} predictions accepted in all"
    if summary is not None and summary.HasField("last_accept_time"):
        last = summary.last_accept_time
        text_ += f", the newest batch at {_when(last)} ({_ago(now - last.seconds)})"
    return text_ + "; windows count each prediction at its produced_at"


def changes_table(model: str, changes: list[Change], previous_n: int, show_all: bool) -> object:
    matters = sum(c.matters for c in changes)
    shown = changes if show_all else [c for c in changes if c.kind == "dimension" or c.matters]
    hidden = len(changes) - len(shown)
    caption = f"{hidden} more metrics moved less (--all shows them)" if hidden else ""
    title = f"{text(model)}: {matters} change{'' if matters == 1 else 's'} that matter"
    title += f" (previous window: {previous_n:,} predictions)"
    t = table("", "before", "now", "change", "why", right=("before", "now", "change"), title=title, caption=caption)
    for c in shown:
        verdict = ("worse: " if c.better is False else "better: " if c.better is True else "") if c.matters else ""
        style = "red" if c.matters and c.better is False else "green" if c.matters and c.better else ""
        why = f"[{style}]{verdict}{text(c.why)}[/{style}]" if style else f"{verdict}{text(c.why)}"
        t.add_row(
            text(c.name),
            "—" if c.before is None else num(c.before, ".4g"),
            "—" if c.after is None else num(c.after, ".4g"),
            "" if c.delta is None else num(c.delta, "+.4g") if c.delta else "0",
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
    "`any` axis, or FAMILY/METRIC (efficiency/latency_p90).",
)  # fmt: skip
@click.option(
    "--allow-empty", is_flag=True,
    help=f"Pass when a --fail-on name has no data in either window (default: exit {UNDECIDED_STATUS}).",
)  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="Every metric, not only the axes and what matters.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model: the changes and the regressions.")
@target_option
@token_option
def compare_command(
    models: tuple[str, ...], window: str, fail_on: str, allow_empty: bool, show_all: bool, as_json: bool,
    target: str, connect: Connect,
) -> None:  # fmt: skip
    """Compare MODELS' last WINDOW with the window before it, as the dashboard does.

    With --fail-on it is a gate: exit 1 when a named axis or metric got significantly worse, exit 3 when
    there is nothing to judge (either window has no value for a named axis or metric), 2 on an error."""
    chosen = _names(fail_on)
    worse: list[tuple[str, Change]] = []
    unjudged: list[str] = []
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
            bad = regressions(changes, chosen)
            worse += [(model, c) for c in bad]
            missing = undecided(chosen, current, previous)
            if missing:
                now_range, before_range = _range_text(current.window), f"{_iso(start)}..{_iso(end)}"
                unjudged.append(
                    f"{model}: nothing to judge for {', '.join(missing)}: the window {now_range} has "
                    f"{current.counts.window_predictions:,} predictions and the one before ({before_range}) "
                    f"{previous.counts.window_predictions:,}, and {'they lack' if len(missing) > 1 else 'it lacks'} "
                    f"a value on one side; {where_the_data_is(client, model, time.time())}"
                )
            if as_json:
                record = {"model": model, "window": window, "previous": [start.isoformat(), end.isoformat()],
                          "changes": [asdict(c) for c in changes], "regressions": [c.name for c in bad],
                          "undecided": missing}  # fmt: skip
                click.echo(json.dumps(record))
                continue
            out.print(changes_table(model, changes, previous.counts.window_predictions, show_all))
    for model, c in worse:
        console(stderr=True).print(
            text(f"{model}: {c.name} got significantly worse")
            + text(f" ({num(c.before or 0, '.4g')} → {num(c.after or 0, '.4g')}; {c.why})")
        )
    for line in unjudged:
        console(stderr=True).print(text(line))
    if worse:
        sys.exit(WORSE_STATUS)
    if unjudged and not allow_empty:
        sys.exit(UNDECIDED_STATUS)


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _range_text(window: pp.Window) -> str:
    if not window.HasField("range"):
        return "all time"
    return f"{_when(window.range.start_time)}..{_when(window.range.end_time)}"
