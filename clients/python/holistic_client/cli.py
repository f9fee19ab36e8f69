"""Client commands of the `holistic` CLI: submit, profile, watch, models."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import click
import grpc
from google.protobuf import json_format
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from holistic.process.run_state import running_gateway
from holistic_client.client import WINDOWS, Client, ClientError, RetryNotice
from holistic_client.demo_sample import SAMPLE, rebased
from holistic_client.detail_panels import SECTIONS
from holistic_client.display import detail_tables, profiles_table
from holistic_client.empty_window import empty_note
from holistic_client.jsonl import Line, parse_processes, read_predictions
from holistic_client.segments import segments_section
from holistic_client.terminal import console as make_console
from holistic_client.terminal import count, table, text

Connect = Callable[[str], Client]
DEFAULT_TARGET = "127.0.0.1:50051"  # HOLISTIC_GATEWAY_ADDRESS's default


target_option = click.option(
    "--target",
    envvar="HOLISTIC_TARGET",
    default=lambda: running_gateway() or DEFAULT_TARGET,
    show_default=f"the gateway of the `holistic up` running here, else {DEFAULT_TARGET}",
    help="Gateway host:port.",
)
_token = click.option("--token", envvar="HOLISTIC_TOKEN", default=None, help="Bearer token.")
_ca = click.option("--ca", envvar="HOLISTIC_TLS_CA", default=None, help="CA certificate (PEM): use TLS.")
_cert = click.option("--cert", envvar="HOLISTIC_TLS_CLIENT_CERT", default=None, help="Client certificate: mutual TLS.")
_key = click.option("--key", envvar="HOLISTIC_TLS_CLIENT_KEY", default=None, help="Client certificate key.")
_wait = click.option(
    "--wait-for-ready", is_flag=True, envvar="HOLISTIC_WAIT_FOR_READY",
    help="Wait (and retry) for a gateway that is not up yet, instead of failing at once naming it.",
)  # fmt: skip


def token_option(fn: Callable[..., None]) -> Callable[..., None]:
    """--token and the TLS options, folded into one `connect` argument."""

    @_token
    @_ca
    @_cert
    @_key
    @_wait
    @functools.wraps(fn)
    def wrapper(
        *args: object, token: str | None, ca: str | None, cert: str | None, key: str | None, wait_for_ready: bool,
        **kw: object,
    ) -> None:  # fmt: skip
        if "connect" not in kw:  # a command invoked by another passes its own connection maker on
            kw["connect"] = lambda target: Client(
                target, token, tls_ca=ca, tls_cert=cert, tls_key=key, on_retry=_say_retrying(target),
                wait_for_ready=wait_for_ready,
            )  # fmt: skip
        fn(*args, **kw)

    return wrapper


window_option = click.option(
    "--window", type=click.Choice(sorted(WINDOWS)), default="all", show_default=True, help="Time window."
)


def _count_lines(path: Path) -> int:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:  # type: ignore[operator]
        return sum(1 for line in fh if line.strip())


def _say_retrying(target: str) -> Callable[[RetryNotice], None]:
    """At once and at each retry: why, which attempt comes next, and when it will give up."""

    def say(n: RetryNotice) -> None:
        why = (
            f"cannot connect to {target}"
            if n.code == grpc.StatusCode.UNAVAILABLE
            else f"{target} answered {n.code.name}"
        )
        until = f", giving up at {time.strftime('%H:%M:%S', time.localtime(n.give_up_at))}" if n.give_up_at else ""
        make_console(True).print(
            text(f"{why}; retrying in {n.sleep_s:.1f} s (attempt {n.attempt + 1} of {n.max_attempts}{until})")
        )

    return say


@click.command()
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--demo", is_flag=True,
    help="Submit the bundled demo sample instead of FILE, its times shifted so the newest is a minute ago.",
)  # fmt: skip
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--model", default="", help="Model for lines that do not name one.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--parse-processes", "parse_processes_", default=0, type=click.IntRange(0, 64),
    help="Processes parsing the file (0: up to 4 spare cores for a file of 128 MiB or more on 4+ cores, else one).",
)  # fmt: skip
@click.option(
    "--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0.1),
    help="Seconds to keep retrying a batch the gateway does not take (down, or busy) before giving up.",
)  # fmt: skip
@click.option(
    "--wait",
    is_flag=True,
    help="Then block until every metric family applied what it accepted for the submitted models.",
)
@click.option(
    "--wait-timeout", default=300.0, show_default=True, type=click.FloatRange(min=0.1),
    help="Seconds --wait waits before giving up (exit 3).",
)  # fmt: skip
@target_option
@token_option
def submit(
    file: Path | None, demo: bool, batch_size: int, model: str, no_progress: bool, parse_processes_: int,
    timeout: float, wait: bool, wait_timeout: float, target: str, connect: Connect,
) -> None:  # fmt: skip
    """Submit a JSON Lines file of holistic.v1.Prediction (canonical protobuf JSON), or --demo."""
    if (file is None) == (not demo):
        raise click.UsageError("give FILE or --demo (one of them)")
    if demo:
        sample = rebased(SAMPLE, time.time())[0]
        lines: Iterable[Line] = sample
        total = None if no_progress else len(sample)
    else:
        assert file is not None
        lines = read_predictions(file, processes=parse_processes_ or parse_processes(file))
        total = None if no_progress else _count_lines(file)  # a pass over the file, for the bar alone
    with connect(target) as client, Progress(
        TextColumn("[bold]submitting"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=make_console(True), disable=no_progress, transient=True,
    ) as progress:  # fmt: skip
        task = progress.add_task("submit", total=total)
        client.retry_for_s = timeout
        try:
            report = client.submit_lines(
                lines,
                batch_size=batch_size,
                model=model,
                on_batch=lambda n: progress.advance(task, n),
            )
        except ClientError as exc:
            make_console(True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    make_console().print(
        f"accepted {count(report.accepted, 'prediction')} in {count(report.batches, 'batch')}"
        f" ({report.duplicates:,} already accepted earlier);"
        f" rejected {count(len({r[0] for r in report.rejected}), 'line')}"
    )
    report.rejected.sort()
    for line, field, reason in report.rejected[:50]:
        where = f" {field}" if field else ""
        if field == "model" and not model:
            reason += " (or give --model)"
        make_console(True).print(text(f"  line {line}:{where} {reason}"))
    if len(report.rejected) > 50:
        make_console(True).print(f"  ... and {len(report.rejected) - 50} more")
    if wait and report.models:
        _wait_applied(connect, target, sorted(report.models), wait_timeout)
    if report.rejected:
        sys.exit(1)


def _wait_applied(connect: Connect, target: str, models: list[str], timeout: float) -> None:
    """submit --wait: a line on stderr per look while predictions are pending; exit 3 on timeout."""
    err = make_console(True)

    def progress(waiting: dict[str, int]) -> None:
        if waiting:
            err.print(text("waiting: pending " + ", ".join(f"{m} {n:,}" for m, n in waiting.items())))

    with connect(target) as client:
        try:
            client.wait_applied(models, timeout, on_progress=progress)
        except (ClientError, TimeoutError) as exc:
            err.print(f"[red]error:[/red] {text(exc)}")
            sys.exit(3)
    make_console().print(f"applied by every family: {', '.join(models)}")


@click.command()
@click.argument("models", nargs=-1, required=True)
@window_option
@click.option("--json", "as_json", is_flag=True, help="Canonical protobuf JSON of the Profile.")
@click.option("--detail", is_flag=True, help="Every panel of the dashboard (or only those named by --section).")
@click.option(
    "--section", "sections", multiple=True, type=click.Choice(sorted(SECTIONS)),
    help="Only this panel (repeatable): why axes are absent or equal, groups, reliability, perturbations, ...",
)  # fmt: skip
@target_option
@token_option
def profile(
    models: tuple[str, ...], window: str, as_json: bool, detail: bool, sections: tuple[str, ...], target: str,
    connect: Connect,
) -> None:  # fmt: skip
    """Show the profile of one or more models."""
    with connect(target) as client:
        try:
            profiles = [client.get_profile(m, window) for m in models]
        except ClientError as exc:
            make_console(True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    if as_json:
        for p in profiles:
            click.echo(json_format.MessageToJson(p))
        return
    out = make_console()
    if sections:
        for p in profiles:
            for name in sections:
                out.print(f"[bold]{text(p.model)}: {name}[/bold]")
                for part in SECTIONS[name](p):
                    out.print(part)
        return
    out.print(profiles_table(profiles, title=f"holistic profiles ({window})"))
    for note in filter(None, (empty_note(p, time.time()) for p in profiles)):
        out.print(text(note))
    for p in profiles:
        if p.window.retention_notice:  # the part of the window past the tenant's retention
            out.print(text(f"{p.model}: {p.window.retention_notice}"))
    for p in profiles if detail else profiles[:1] if len(profiles) == 1 else []:
        for part in detail_tables(p):
            out.print(part)
        for part in segments_section(p) if p.segments and not detail else ():
            out.print(part)
        for name in SECTIONS if detail else ():
            out.print(f"[bold]{text(p.model)}: {name}[/bold]")
            for part in SECTIONS[name](p):
                out.print(part)


@click.command()
@click.argument("model")
@window_option
@click.option("--json", "as_json", is_flag=True, help="One canonical JSON Profile per line.")
@target_option
@token_option
def watch(model: str, window: str, as_json: bool, target: str, connect: Connect) -> None:
    """Print the profile again each time a batch of MODEL is applied (Ctrl-C to stop)."""
    with connect(target) as client:
        try:
            for p in client.watch_profile(model, window):
                if as_json:
                    click.echo(json_format.MessageToJson(p, indent=None), nl=True)
                else:
                    out = make_console()
                    out.print(profiles_table([p], title=f"{model} ({window}) at {p.compute_time.ToJsonString()}"))
                    if p.window.retention_notice:
                        out.print(text(f"{p.model}: {p.window.retention_notice}"))
        except ClientError as exc:
            make_console(True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
        except KeyboardInterrupt:
            pass


@click.command()
@target_option
@token_option
def models(target: str, connect: Connect) -> None:
    """List the models the service has accepted predictions for."""
    with connect(target) as client:
        try:
            summaries = client.list_models()
        except ClientError as exc:
            make_console(True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    out = table("model", "predictions", "batches", "first accepted", "last accepted", title="models",
                right=("predictions", "batches"))  # fmt: skip
    for s in summaries:
        out.add_row(
            text(s.model), f"{s.accepted_predictions:,}", f"{s.accepted_batches:,}",
            s.first_accept_time.ToJsonString() if s.HasField("first_accept_time") else "",
            s.last_accept_time.ToJsonString() if s.HasField("last_accept_time") else "",
        )  # fmt: skip
    make_console().print(out)


WINDOW_TITLES = {"all": "all time", "15m": "last 15 minutes", "1h": "last hour", "24h": "last day",
                 "1d": "last day", "7d": "last week"}  # fmt: skip


@click.command()
@click.argument("models", nargs=-1, required=True)
@window_option
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="radar.svg or radar.png."
)
@target_option
@token_option
def radar(models: tuple[str, ...], window: str, output: Path, target: str, connect: Connect) -> None:
    """Draw the profiles of MODELS as one radar chart (an absent axis is a gap, never 0)."""
    from holistic_client.radar import format_for, render

    try:
        fmt = format_for(output)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--output") from None
    with connect(target) as client:
        try:
            profiles = [client.get_profile(m, window) for m in models]
        except ClientError as exc:
            make_console(True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    output.write_bytes(render(profiles, fmt, title=f"holistic profiles, {WINDOW_TITLES[window]}"))
    make_console().print(f"wrote {output} ({count(len(profiles), 'model')})")


COMMANDS = (submit, profile, watch, models, radar)
