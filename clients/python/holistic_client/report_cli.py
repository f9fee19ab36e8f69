"""`holistic report MODEL... -o report.html`: the profiles as one self-contained HTML file."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from holistic_client.cli import WINDOW_TITLES, Connect, target_option, token_option, window_option
from holistic_client.client import ClientError
from holistic_client.report import build_report
from holistic_client.terminal import console, count, text


@click.command("report")
@click.argument("models", nargs=-1, required=True)
@window_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="report.html")
@target_option
@token_option
def report_command(models: tuple[str, ...], window: str, output: Path, target: str, connect: Connect) -> None:
    """Write MODELS' profiles as one HTML file (radar, matrix, every panel, signatures) that needs no network."""
    with connect(target) as client:
        try:
            profiles = [client.get_profile(m, window) for m in models]
        except ClientError as exc:
            console(stderr=True).print(f"[red]error:[/red] {text(exc)}")
            sys.exit(2)
    page = build_report(profiles, WINDOW_TITLES[window], datetime.now(UTC), source=f"gateway {target}")
    output.write_text(page, encoding="utf-8")
    console().print(text(f"wrote {output} ({count(len(profiles), 'model')}, {len(page.encode()):,} bytes)"))
