"""`holistic compare`: a window against the one just before it, or one model against another, through
the gateway's CompareProfiles (the same tests as the dashboard's), and an exit status a CI job or a cron
can gate on."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

import click

from holistic.compare.profiles import ABS_TOLERANCE, Change, significantly_worse
from holistic.compare.significance import HOLM
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import profile_pb2 as pp
from holistic_client.axes import axis_name, dimension_name
from holistic_client.cli import Connect, target_option, token_option
from holistic_client.client import WINDOWS, ClientError
from holistic_client.empty_window import newest_text, range_text
from holistic_client.terminal import console, num, table, text

AXES = [axis_name(k) for k in pp.DimensionKind.values() if k]
WORSE_STATUS = 1  # a chosen axis got significantly worse; 2 stays for errors
EMPTY_STATUS = 3  # not enough data to decide: a --fail-on name without a value on a side or a test (fails closed)


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
    """Changes named by --fail-on (`any`: every radar axis) significantly worse beyond `margin`: the
    gateway's margin test (holistic/compare/margin.py), Holm over the named cells."""
    return significantly_worse(changes, fail_on, margin)


def evidence(c: Change, multiplicity: str = HOLM, margin: float = 0.0) -> str:
    """`-0.5 (95% -0.62 to -0.38), p 1.2e-05, Holm 3.6e-05, Newcombe/two-proportion z; margin 0.3: p 0.0082,
    Holm 0.0082`, or the rule it fell back on."""
    if c.p_holm is None or c.diff_lower is None or c.diff_upper is None:
        return c.why
    said = (f"{num(c.delta or 0.0, '+.3g')} (95% {num(c.diff_lower, '+.3g')} to {num(c.diff_upper, '+.3g')}), "
            f"p {c.p:.2g}, {multiplicity} {c.p_holm:.2g}, {c.method}")  # fmt: skip
    if c.p_margin is not None:
        said += f"; margin {margin:g}: p {c.p_margin:.2g}"
        said += f", {multiplicity} {c.p_margin_adjusted:.2g}" if c.p_margin_adjusted is not None else ""
    return said


def changes_table(
    model: str, changes: list[Change], previous_n: int, show_all: bool, what: str | None = None
) -> object:
    matters = sum(c.matters for c in changes)
    shown = changes if show_all else [c for c in changes if c.kind == "dimension" or c.matters]
    hidden = len(changes) - len(shown)
    caption = f"{hidden} more metrics moved less (--all shows them)" if hidden else ""
    title = f"{text(model)}: {matters} change{'' if matters == 1 else 's'} that matter"
    title += f" ({what})" if what else f" (previous window: {previous_n:,} predictions)"
    numeric = ("before", "now", "change", "p (adjusted)", "p margin")
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
            "" if c.p_margin is None else f"{c.p_margin:.2g}",
            why,
        )
    return t


def changes_of(response: es.CompareProfilesResponse) -> list[Change]:
    """The response's cells as the table and --json show them (the dashboard's Change)."""
    out = []
    for c in response.cells:
        unsure = c.verdict == es.VERDICT_NO_DIRECTION or (c.kind == "paired" and not c.HasField("p_margin"))
        direction = -1 if c.lower_is_better else 0 if unsure else 1
        delta = c.difference if c.HasField("difference") else None
        moved = delta is not None and abs(delta) > ABS_TOLERANCE
        better = (delta > 0) == (direction > 0) if moved and direction and delta is not None else None
        out.append(
            Change(
                c.name, c.kind, c.before if c.HasField("before") else None, c.after if c.HasField("after") else None,
                delta, better, c.matters, c.why, c.lower if c.HasField("lower") else None,
                c.upper if c.HasField("upper") else None, c.p if c.HasField("p") else None,
                c.p_adjusted if c.HasField("p_adjusted") else None, c.test, direction,
                c.p_margin if c.HasField("p_margin") else None,
                c.p_margin_adjusted if c.HasField("p_margin_adjusted") else None,
            )
        )  # fmt: skip
    return out


def _nothing_to_judge(label: str, response: es.CompareProfilesResponse, two: bool, now: float) -> str:
    before, after = response.before, response.after
    names = ", ".join(response.not_enough_data)
    if two:
        return (f"{label}: nothing to judge for {names}: over {range_text(after.window)} {before.model} has "
                f"{before.counts.window_predictions:,} predictions, {after.model} "
                f"{after.counts.window_predictions:,} (or a cell has no test)")  # fmt: skip
    return (
        f"{label}: nothing to judge for {names}: the window {range_text(after.window)} "
        f"has {after.counts.window_predictions:,} predictions, the one before "
        f"({range_text(before.window)}) {before.counts.window_predictions:,}; " + newest_text(after, now)
    )


@click.command("compare")
@click.argument("models", nargs=-1, required=True)
@click.option(
    "--window", type=click.Choice(sorted(WINDOWS)), default="1h", show_default=True,
    help="One model: this window, compared with the one of equal length just before it. Two models: the "
    "window both are read over (all: all time, where corpus-level cells have nothing to resample).",
)  # fmt: skip
@click.option(
    "--fail-on", "fail_on", default="", metavar="AXES",
    help="Exit 1 when one of these got significantly worse: comma-separated axes (accuracy,toxicity), "
    f"`any` axis, or FAMILY/METRIC (efficiency/latency_p90); exit {EMPTY_STATUS} when one has no value on a "
    "side, no test, or no better or worse (not enough data to decide).",
)  # fmt: skip
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="With --fail-on, fail only when a cell is significantly worse by more than this (in the cell's own "
    "unit): a one-sided test of 'worse by at most MARGIN', adjusted over the --fail-on cells (p margin).",
)
@click.option(
    "--multiplicity", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
    help="How p-values are adjusted over the cells compared: Holm, or Benjamini-Hochberg.",
)  # fmt: skip
@click.option(
    "--allow-empty", is_flag=True,
    help=f"With --fail-on, pass (exit 0) instead of exit {EMPTY_STATUS} when there is not enough data to decide.",
)  # fmt: skip
@click.option("--all", "show_all", is_flag=True, help="Every metric, not only the axes and what matters.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the cells, the decision and the regressions.")
@target_option
@token_option
def compare_command(
    models: tuple[str, ...], window: str, fail_on: str, margin: float, multiplicity: str, allow_empty: bool,
    show_all: bool, as_json: bool, target: str, connect: Connect,
) -> None:  # fmt: skip
    """Compare MODEL's last WINDOW with the window before it, or MODEL A with MODEL B over WINDOW
    (the gateway's CompareProfiles: a test per cell, adjusted over every cell compared).

    With --fail-on it is a gate that fails closed: exit 1 when a named axis or metric got significantly
    worse beyond --margin, else exit 3 when one has no value on a side or no test (not enough data to
    decide; --allow-empty passes instead)."""
    if len(models) > 2:
        raise click.UsageError("give one model (its window against the one before) or two (A against B)")
    if len(models) == 1 and window == "all":
        raise click.BadParameter("one model needs a window other than all (it is compared with the one before)",
                                 param_hint="--window")  # fmt: skip
    chosen = _names(fail_on)
    method = es.MULTIPLICITY_BENJAMINI_HOCHBERG if multiplicity == "bh" else es.MULTIPLICITY_HOLM
    a, b = models[0], models[1] if len(models) == 2 else ""
    label = f"{a} vs {b}" if b else a
    with connect(target) as client:
        try:
            response = client.compare_profiles(a, b, window, margin, fail_on=chosen, multiplicity=method)
        except ClientError as exc:
            console(stderr=True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    _check_axes(chosen, response.after)
    changes = changes_of(response)
    gate = bool(chosen)
    worse = [c for c in changes if c.name in response.worse] if gate else []
    empty = gate and response.decision == es.DECISION_NOT_ENOUGH_DATA
    if as_json:
        record = {"model": a, "other_model": b, "window": window, "before": range_text(response.before.window),
                  "after": range_text(response.after.window), "multiplicity": response.multiplicity,
                  "changes": [asdict(c) for c in changes], "regressions": [c.name for c in worse],
                  "nothing_to_judge": list(response.not_enough_data) if gate else [],
                  "decision": es.Decision.Name(response.decision).removeprefix("DECISION_").lower(),
                  "summary": response.summary}  # fmt: skip
        click.echo(json.dumps(record))
    else:
        title = (f"{b} against {a}: {response.before.counts.window_predictions:,} and "
                 f"{response.after.counts.window_predictions:,} predictions") if b else None  # fmt: skip
        table_ = changes_table(label, changes, response.before.counts.window_predictions, show_all, title)
        console().print(table_)
    for c in worse:
        console(stderr=True).print(
            text(f"{label}: {c.name} got significantly worse")
            + text(
                f" ({num(c.before or 0, '.4g')} → {num(c.after or 0, '.4g')}; "
                f"{evidence(c, response.multiplicity, response.margin)})"
            )
        )
    if worse:
        sys.exit(WORSE_STATUS)
    if empty:
        line = _nothing_to_judge(label, response, bool(b), time.time())
        console(stderr=True).print(
            text(line) + ("" if allow_empty else f" (exit {EMPTY_STATUS}; --allow-empty passes)")
        )
        if not allow_empty:
            sys.exit(EMPTY_STATUS)
