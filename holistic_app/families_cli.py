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
    from holistic.settings import Settings
    from holistic.workqueue import WorkQueue

err = Console(stderr=True)


def _queues(settings: Settings) -> list[WorkQueue]:
    # imported here: redis and pydantic cost every `holistic` command ~0.2 s at start, `submit` included
    from holistic.keys import Keys
    from holistic.local_redis import with_local_redis
    from holistic.redis_conn import sync_client
    from holistic.workqueue import WorkQueue

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
def families_list() -> None:
    """Every installed or deployed family: its axis, version, and its group's backlog per shard."""
    settings = _settings()
    backlog: dict[str, int] = {}
    for queue in _queues(settings):
        for name, n in queue.backlog().items():
            backlog[name] = backlog.get(name, 0) + n
    table = Table(title="metric families")
    for col in ("family", "version", "axis", "installed", "deployed", "backlog (batches)"):
        table.add_column(col)
    from holistic.registry import installed, load_family

    for name in sorted(set(installed()) | set(backlog)):
        try:
            fam = load_family(name)
            version, axis, here = fam.version, fam.axis.name if fam.axis else "", "yes"
        except KeyError:
            version, axis, here = "", "", "no"
        deployed = name in backlog
        table.add_row(
            escape(name), version, escape(axis), here, "yes" if deployed else "no",
            f"{backlog[name]:,}" if deployed else "",
        )  # fmt: skip
    Console().print(table)


@families.command("add")
@click.argument("names", nargs=-1, required=True)
def families_add(names: tuple[str, ...]) -> None:
    """Create the consumer groups of installed families: the gateway stamps batches for them from now on,
    and they wait for the families' workers."""
    from holistic.registry import load_family

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
