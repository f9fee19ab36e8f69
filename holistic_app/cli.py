"""The `holistic` command: run the service's processes, and the client commands."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape

from holistic.errors import ConfigError, InvalidArgument
from holistic_app.cli_errors import OneLineErrors
from holistic_app.families_cli import families as families_group
from holistic_app.integrations_cli import COMMANDS as INTEGRATION_COMMANDS
from holistic_app.models_cli import models as models_group
from holistic_client.cli import COMMANDS, target_option
from holistic_client.compare_cli import compare_command
from holistic_client.delete_cli import COMMANDS as DELETE_COMMANDS
from holistic_client.report_cli import report_command
from holistic_client.terminal import console, table, text

if TYPE_CHECKING:
    from holistic.settings import Settings

err = Console(stderr=True, soft_wrap=True)  # an error is one line, however long


def _settings() -> Settings:
    from holistic.settings import load_settings  # pydantic: ~0.1 s that `holistic submit` does not need

    try:
        return load_settings()
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        sys.exit(2)


def _logging(settings: Settings) -> None:
    from holistic.process.observability import setup_logging

    setup_logging(settings.log_format, settings.log_level)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """holistic: continuous, HELM-style holistic evaluation of language-model traffic."""


@main.command()
@click.option("--demo", is_flag=True, help="Stream the bundled sample, print the profiles, then stop.")
@click.option("--keep-running", is_flag=True, help="With --demo: keep serving afterwards.")
@click.option("--address", default=None, help="Gateway host:port (default HOLISTIC_GATEWAY_ADDRESS).")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None, help="Where the private Redis keeps data.")
@click.option("--dashboard-address", default=None, help="Dashboard host:port (default HOLISTIC_DASHBOARD_ADDRESS).")
@click.option("--no-dashboard", is_flag=True, help="Do not start the web dashboard.")
def up(
    demo: bool,
    keep_running: bool,
    address: str | None,
    data_dir: Path | None,
    dashboard_address: str | None,
    no_dashboard: bool,
) -> None:
    """Everything on embedded defaults: private Redis, gateway, one worker per family, janitor, and the
    web dashboard (its address is printed at start; --no-dashboard leaves it out)."""
    from holistic_app import up as up_mod

    if demo:  # the sample's rows carry metadata app_version: the demo shows its segments, unless told otherwise
        from holistic_app.demo import SEGMENT_KEYS

        os.environ.setdefault("HOLISTIC_SEGMENT_KEYS", SEGMENT_KEYS)
    settings = _settings()
    _logging(settings)
    temp_dir = None
    if data_dir is None:
        if demo:
            temp_dir = data_dir = Path(tempfile.mkdtemp(prefix="holistic-demo-"))
        else:
            data_dir = settings.data_dir
    if address is None:
        address = up_mod.free_address() if demo else settings.gateway_address
    if not no_dashboard and dashboard_address is None:
        dashboard_address = up_mod.free_address() if demo else settings.dashboard_address
    stack = up_mod.Stack(
        settings, address, data_dir, log_dir=data_dir / "logs" if demo else None,
        dashboard_address=None if no_dashboard else dashboard_address,
    )  # fmt: skip
    try:
        stack.start()
        err.print(
            f"[green]holistic is up[/green]: gateway {address}, families {', '.join(settings.deployed_families())}"
        )
        if stack.dashboard_url:
            err.print(f"dashboard: [link={stack.dashboard_url}]{stack.dashboard_url}[/link]")
        if demo:
            from holistic_app import demo as demo_mod

            demo_mod.run(address)
        if not demo or keep_running:
            stack.run_forever()
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(2)
    finally:
        stack.stop()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


@main.command()
@click.option("--address", default=None, help="host:port to listen on (default HOLISTIC_GATEWAY_ADDRESS).")
@click.option(
    "--processes",
    type=click.IntRange(1, 64),
    default=None,
    help="Gateway processes sharing the port (SO_REUSEPORT); default HOLISTIC_GATEWAY_PROCESSES.",
)
def gateway(address: str | None, processes: int | None) -> None:
    """Run the gRPC gateway."""
    from gateway.server import serve, serve_processes

    settings = _settings()
    _logging(settings)
    try:
        n = processes or settings.gateway_processes
        if n > 1:
            sys.exit(serve_processes(settings, address, n))
        import asyncio

        asyncio.run(serve(settings, address))
    except (ConfigError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


@main.command()
@click.argument("family")
def worker(family: str) -> None:
    """Run one replica of an installed metric family's service (start more to scale it)."""
    from holistic.families.registry import load_family
    from holistic.process.observability import serve_metrics
    from holistic.redis.connection import sync_client
    from holistic.redis.local import with_local_redis
    from metric_services.runner import run_worker

    settings = _settings()
    _logging(settings)
    try:
        configured = load_family(family).configured()  # its settings as this process's environment has them
        serve_metrics(settings.metrics_address)
        run_worker(configured, settings, sync_client(with_local_redis(settings)))
    except ConfigError as exc:  # e.g. a model the family needs at start cannot be loaded
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(2)


@main.command()
@click.option("--address", default=None, help="host:port to serve the page on (default HOLISTIC_DASHBOARD_ADDRESS).")
@target_option
@click.option(
    "--token", envvar=["HOLISTIC_DASHBOARD_TOKEN", "HOLISTIC_TOKEN"], default=None, help="Bearer token for the gateway."
)
@click.option("--ca", envvar="HOLISTIC_TLS_CA", default=None, help="CA certificate (PEM): reach the gateway over TLS.")
@click.option("--cert", envvar="HOLISTIC_TLS_CLIENT_CERT", default=None, help="Client certificate: mutual TLS.")
@click.option("--key", envvar="HOLISTIC_TLS_CLIENT_KEY", default=None, help="Client certificate key.")
@click.option(
    "--allowed-hosts",
    envvar="HOLISTIC_DASHBOARD_ALLOWED_HOSTS",
    default="",
    help="Host names (comma separated) the page may be reached by, besides IP addresses and localhost.",
)
def dashboard(
    address: str | None,
    target: str,
    token: str | None,
    ca: str | None,
    cert: str | None,
    key: str | None,
    allowed_hosts: str,
) -> None:
    """Serve the live web dashboard, reading the gateway at --target with --token."""
    from holistic_client.client import tls_credentials
    from holistic_dashboard.server import serve

    credentials = tls_credentials(ca, cert, key) if ca or cert else None

    settings = _settings()
    _logging(settings)

    def ready(url: str) -> None:
        err.print(f"dashboard on [link={url}]{url}[/link], reading the gateway at {target}")

    try:
        where = address or settings.dashboard_address
        hosts = allowed_hosts.split(",")
        import asyncio

        asyncio.run(serve(where, target, token, on_ready=ready, credentials=credentials, allowed_hosts=hosts))
    except OSError as exc:
        err.print(f"[red]error:[/red] {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        pass


@main.command()
def janitor() -> None:
    """Trim the work stream below what every family still needs."""
    from holistic.process.stop_signal import stop_on_signals
    from holistic.queue.janitor import run_janitor
    from holistic.redis.connection import sync_client
    from holistic.redis.local import with_local_redis

    settings = _settings()
    _logging(settings)
    # As a container's PID 1 the process has no default SIGTERM action: stop between sweeps instead.
    stop = threading.Event()
    stop_on_signals(stop)
    run_janitor(settings, sync_client(with_local_redis(settings)), stop)


@main.group()
def tokens() -> None:
    """Create tenant tokens (the service stores only their sha256)."""


@tokens.command("new")
@click.argument("tenant")
@click.option("--admin", is_flag=True, help="An admin token (deletions) named TENANT, for HOLISTIC_ADMIN_TOKENS.")
def tokens_new(tenant: str, admin: bool) -> None:
    """Print a new random token for TENANT, and the line to add to HOLISTIC_TOKENS(_FILE)."""
    from holistic.tenancy.tenants import TENANT_RE, hash_token, new_token

    if not TENANT_RE.fullmatch(tenant):
        err.print(f"[red]error:[/red] a {'name' if admin else 'tenant name'} must match {TENANT_RE.pattern}")
        sys.exit(2)
    token = new_token()
    who, where = ("the admin", "HOLISTIC_ADMIN_TOKENS") if admin else ("the tenant", "HOLISTIC_TOKENS_FILE")
    click.echo(f"token (give it to {who}; it is not stored):".ljust(50) + f"{token}")
    click.echo(f"entry (add it to {where}):".ljust(50) + f"{tenant}:sha256:{hash_token(token)}")


@main.group()
def dlq() -> None:
    """Inspect and replay dead-lettered batches (REDIS_URL, else the Redis of the `holistic up` running here)."""


def _queues(settings: Settings) -> list:  # type: ignore[type-arg]
    from holistic.queue.work import WorkQueue
    from holistic.redis.connection import sync_client
    from holistic.redis.keys import Keys
    from holistic.redis.local import with_local_redis

    client, keys = sync_client(with_local_redis(settings)), Keys(settings.key_prefix)
    return [WorkQueue(client, keys, shard=n) for n in range(settings.queue_shards)]


@dlq.command("list")
@click.option("--count", default=100, show_default=True, help="Per queue shard.")
def dlq_list(count: int) -> None:
    """Dead letters: which family gave up on which batch, and why."""
    settings = _settings()
    out = table("id", "shard", "family", "model", "seq", "deliveries", "reason", title="dead letters")
    for queue in _queues(settings):
        for dl_id, info in queue.dead_letters(count):
            out.add_row(*(text(v) for v in (dl_id, queue.shard, info.get("group", ""), info.get("m", ""),
                          info.get("s", ""), info.get("deliveries", ""), info.get("reason", ""))))  # fmt: skip
    console().print(out)


@dlq.command("replay")
@click.argument("ids", nargs=-1)
@click.option("--all", "replay_all", is_flag=True, help="Replay every dead letter.")
def dlq_replay(ids: tuple[str, ...], replay_all: bool) -> None:
    """Put dead letters back on the work stream (safe: applied families skip them)."""
    settings = _settings()
    queues = _queues(settings)
    if not ids and not replay_all:
        err.print("nothing to replay: give dead-letter ids or --all")
        sys.exit(1)
    wanted = None if replay_all else set(ids)
    replayed: set[str] = set()
    for queue in queues:
        for dl_id, _ in queue.dead_letters(1_000_000):
            if wanted is not None and dl_id not in wanted:
                continue
            new_id = queue.replay(dl_id)
            if new_id is not None:
                replayed.add(dl_id)
                click.echo(f"{dl_id} -> {new_id}")
    missing = sorted((wanted or set()) - replayed)
    for dl_id in missing:
        err.print(f"no dead letter {dl_id}")
    if not replayed and replay_all:
        err.print("no dead letters")
    sys.exit(1 if missing else 0)


@main.command()
@click.argument("infile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("outfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--with",
    "with_",
    required=True,
    help="Perturbations, comma separated, options after colons: "
    "typos:prob=0.05,lowercase,contraction,expansion,space:max_spaces=3,extra_space,"
    "gender:mode=terms:both=true,person_name,dialect:mapping=FILE.json",
)
@click.option("--seed", type=int, default=None, help="Mixed into each id's generator (HELM: str(seed) + id).")
@click.option("--variants-only", is_flag=True, help="Leave the unperturbed rows out of OUTFILE.")
def perturb(infile: Path, outfile: Path, with_: str, seed: int | None, variants_only: bool) -> None:
    """Write perturbed variants of INFILE's predictions (JSON Lines) to OUTFILE, tagged and ready to
    be answered by the model and submitted."""
    from google.protobuf import json_format

    from holistic import perturbations as pt
    from holistic_client.jsonl import read_predictions

    try:
        perturbers = pt.build(pt.parse_specs(with_), where="--with")
    except InvalidArgument as exc:
        for v in exc.violations:
            err.print(f"[red]{v.field}[/red]: {v.description}")
        sys.exit(2)
    lines = list(read_predictions(infile))
    bad = [ln for ln in lines if ln.prediction is None or not ln.prediction.id]
    if bad:
        err.print(f"[red]{len(bad)} lines without a readable prediction with an id[/red], first: line {bad[0].number}")
        sys.exit(2)
    rows, unchanged = pt.perturb((ln.prediction for ln in lines), perturbers, seed, not variants_only)  # type: ignore[misc]
    with outfile.open("w") as fh:
        for row in rows:
            fh.write(json_format.MessageToJson(row, indent=None, sort_keys=True) + "\n")
    variants = len(rows) - (0 if variants_only else len(lines))
    click.echo(f"{len(lines):,} predictions -> {variants:,} variants ({unchanged:,} unchanged, left out) in {outfile}")


for _command in (*COMMANDS, compare_command, report_command, *DELETE_COMMANDS):
    if _command.name != "models":  # wrapped by the classifier-models group below
        main.add_command(_command)
main.add_command(models_group)
main.add_command(families_group)
for _command in INTEGRATION_COMMANDS:
    main.add_command(_command)
