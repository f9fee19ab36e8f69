"""The front door: a README a newcomer reads in minutes, whose commands and links are real."""

from __future__ import annotations

import re
from pathlib import Path

from holistic_app.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_it_is_short_and_opens_with_the_two_commands():
    assert len(README.splitlines()) <= 300
    first_block = README.split("```", 2)[1]
    assert "./dev demo" in first_block and "./dev test" in first_block
    assert "exec ./dev test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_link_names_a_file_in_the_repository():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert len(links) > 10
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert missing == []


def test_the_cli_table_names_every_command():
    table = {m for m in re.findall(r"^\| `holistic ([a-z-]+)", README, flags=re.MULTILINE)}
    table |= {"worker", "janitor"} if "`worker FAMILY` / `janitor`" in README else set()
    assert table == set(cli.commands)
