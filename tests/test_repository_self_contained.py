"""Nothing in the repository cites a file outside it: the design notes it was built from are not shipped."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared\b|shared/reference/|/work/shared")


def test_no_file_refers_to_files_outside_the_repository() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    offenders = []
    for name in files:
        path = ROOT / name
        if name == "tests/test_repository_self_contained.py" or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert offenders == []


def test_the_architecture_document_names_files_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:holistic|gateway|metric_services|tests|clients|protos|docs)/[\w/.-]+)`", text))
    assert len(named) > 20
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert missing == []
