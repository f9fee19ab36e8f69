"""`holistic delete-model` and `holistic delete-tenant`: the admin commands that delete a model's or a tenant's
data, after a confirmation; and `holistic audit`, which reads what was done."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click

from holistic.v1 import evaluation_service_pb2 as es
from holistic_client.cli import Connect, target_option, token_option
from holistic_client.terminal import console, count, table, text

yes_option = click.option("--yes", is_flag=True, help="Do not ask: delete at once (scripts).")


def confirm(what: str, yes: bool) -> None:
    """Ask before a deletion unless --yes; without a terminal to ask on, refuse."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"not deleting {what} without --yes (no terminal to confirm on)")
    click.confirm(f"Delete {what}? This cannot be undone", abort=True, err=True)


def show_removed(removed: Iterable[es.RemovedKeys], title: str) -> None:
    rows = list(removed)
    if not rows:
        console().print(text(f"{title}: nothing left to remove"))
        return
    out = table("key family", "removed", title=title, right=("removed",))
    for r in rows:
        out.add_row(text(r.key_family), f"{r.count:,}")
    console().print(out)


@click.command("delete-model")
@click.argument("model")
@click.option("--tenant", default="", help="The model's tenant (default: the tenant named default).")
@yes_option
@target_option
@token_option
def delete_model(model: str, tenant: str, yes: bool, target: str, connect: Connect) -> None:
    """Delete everything the service keeps of MODEL (needs an admin token: HOLISTIC_ADMIN_TOKENS)."""
    confirm(f"every prediction, statistic and key of model {model!r} of tenant {tenant or 'default'!r}", yes)
    with connect(target) as client:  # a ClientError ends in one line (holistic_app/cli_errors.py)
        reply = client.delete_model(model, tenant)
    show_removed(reply.removed, f"deleted model {model}")


@click.command("delete-tenant")
@click.argument("tenant")
@yes_option
@target_option
@token_option
def delete_tenant(tenant: str, yes: bool, target: str, connect: Connect) -> None:
    """Delete everything the service keeps of TENANT ("default" included), every model of it (needs an admin
    token: HOLISTIC_ADMIN_TOKENS). Its tokens stay valid: revoke them in the token file."""
    confirm(f"every model, prediction, statistic and key of tenant {tenant!r}", yes)
    with connect(target) as client:  # a ClientError ends in one line (holistic_app/cli_errors.py)
        reply = client.delete_tenant_data(tenant)
    show_removed(reply.removed, f"deleted tenant {tenant}: {count(len(reply.models), 'model')}")


@click.command("audit")
@click.argument("tenant")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@target_option
@token_option
def audit(tenant: str, as_json: bool, target: str, connect: Connect) -> None:
    """TENANT's audit trail, oldest first: deletions (what, by which admin) and token use (needs an admin token)."""
    import json
    from datetime import UTC, datetime

    with connect(target) as client:
        entries = list(client.iter_audit(tenant))
    if as_json:
        for e in entries:
            at = datetime.fromtimestamp(e.time.ToMilliseconds() / 1000, tz=UTC).isoformat(timespec="milliseconds")
            record = {
                "id": e.id,
                "time": at,
                "action": e.action,
                "actor": e.actor,
                "details": json.loads(e.details_json),
            }
            click.echo(json.dumps(record, sort_keys=True))
        return
    out = table("time (UTC)", "action", "actor", "details", title=f"audit trail of tenant {text(tenant)}",
                caption=f"{count(len(entries), 'entry')}")  # fmt: skip
    for e in entries:
        at = datetime.fromtimestamp(e.time.ToMilliseconds() / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        out.add_row(at, text(e.action), text(e.actor), text(e.details_json))
    console().print(out)


COMMANDS = (delete_model, delete_tenant, audit)
