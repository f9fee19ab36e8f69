"""`holistic families`: the installed metric families, the deployed ones (their consumer groups), and
creating or removing a family's group without starting or stopping its workers."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from holistic.errors import ConfigError

if TYPE_CHECKING:
    from holistic.queue.work import WorkQueue
    from holistic.settings import Settings

err = Console(stderr=True, soft_wrap=True)  # an error is one line, however long


def _queues(settings: Settings) -> list[WorkQueue]:
    # imported here: redis and pydantic cost every `holistic` command ~0.2 s at start, `submit` included
    from holistic.queue.work import WorkQueue
    from holistic.redis.connection import sync_client
    from holistic.redis.keys import Keys
    from holistic.redis.local import with_local_redis

    client, keys = sync_client(with_local_redis(settings)), Keys(settings.key_prefix)
    return [WorkQueue(client, keys, shard=n) for n in range(settings.queue_shards)]


def _settings() -> Settings:
    from holistic.settings import load_settings

    try:
        return load_settings()
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {escape(str(exc))}")
        sys.exit(2)


@click.group()
def families() -> None:
    """Installed and deployed metric families."""


@families.command("list")
@click.option(
    "--target", default=None, help="Ask this gateway (host:port) instead of Redis: what it folds, what runs, backlogs."
)
@click.option("--token", envvar="HOLISTIC_TOKEN", default=None, help="Bearer token for --target.")
def families_list(target: str | None, token: str | None) -> None:
    """Every installed or deployed family: its axis, version, and its group's backlog.

    From Redis (REDIS_URL, else the running `holistic up`'s), with installed meaning beside this
    command; with --target, from that gateway, installed meaning beside the gateway."""
    unknown = ""
    if target:
        rows = _from_gateway(target, token)
    else:
        try:
            backlog: dict[str, int] | None = _backlog()
        except ConfigError as exc:  # no Redis to ask: the installed families still show
            backlog, unknown = None, str(exc)
        rows = _installed_and(backlog)
    table = Table(title="metric families" + (f" (gateway {escape(target)})" if target else ""))
    for col in ("family", "version", "axis", "installed", "deployed", "backlog (batches)"):
        table.add_column(col)
    for name, version, axis, here, deployed, n in rows:
        table.add_row(
            escape(name), version, escape(axis), "yes" if here else "no",
            "?" if deployed is None else "yes" if deployed else "no", f"{n:,}" if deployed else "",
        )  # fmt: skip
    Console().print(table)
    if unknown:
        err.print(f"deployed and backlog unknown: {escape(unknown)}")


Row = tuple[
    str, str, str, bool, bool | None, int
]  # family, version, axis, installed, deployed (None: unknown), backlog


def _backlog() -> dict[str, int]:
    """Batches not yet applied per deployed family (its consumer group), over every shard."""
    backlog: dict[str, int] = {}
    for queue in _queues(_settings()):
        for name, n in queue.backlog().items():
            backlog[name] = backlog.get(name, 0) + n
    return backlog


def _installed_and(backlog: dict[str, int] | None) -> list[Row]:
    """Every family installed beside this command or deployed; `backlog` None: deployment unknown."""
    from holistic.families.registry import installed, load_family

    rows: list[Row] = []
    for name in sorted(set(installed()) | set(backlog or {})):
        try:
            fam = load_family(name)
            version, axis, here = fam.version, fam.axis.name if fam.axis else "", True
        except KeyError:
            version, axis, here = "", "", False
        deployed = None if backlog is None else name in backlog
        rows.append((name, version, axis, here, deployed, (backlog or {}).get(name, 0)))
    return rows


def _from_gateway(target: str, token: str | None) -> list[Row]:
    from holistic_client.client import Client

    with Client(target, token, wait_for_ready=False) as client:  # a ClientError ends in one line (cli_errors.py)
        found = client.list_families()
    return [(f.family, f.version, f.axis, f.installed, f.deployed, f.backlog_batches) for f in found]


@families.command("add")
@click.argument("names", nargs=-1, required=True)
def families_add(names: tuple[str, ...]) -> None:
    """Create the consumer groups of installed families: the gateway stamps batches for them from now on,
    and they wait for the families' workers."""
    from holistic.families.registry import load_family

    settings = _settings()
    for name in names:
        try:
            load_family(name)
        except KeyError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            sys.exit(2)
    for queue in _queues(settings):
        for name in names:
            made = queue.ensure_group(name)
            click.echo(f"{queue.stream}: {name} {'created' if made else 'exists'}")


@families.command("remove")
@click.argument("names", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Do not ask.")
def families_remove(names: tuple[str, ...], yes: bool) -> None:
    """Delete families' consumer groups: new batches are no longer stamped for them, and their backlog no
    longer holds back the gateway. Their statistics stay readable until they expire."""
    settings = _settings()
    if not yes:
        click.confirm(f"remove the consumer groups of {', '.join(names)}?", abort=True)
    for queue in _queues(settings):
        for name in names:
            removed = queue.r.xgroup_destroy(queue.stream, name) if queue.groups() else 0
            click.echo(f"{queue.stream}: {name} {'removed' if removed else 'had no group'}")
