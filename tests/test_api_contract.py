"""The API stays Buf-STANDARD clean and wire/JSON compatible with the released image."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROTOS = Path(__file__).resolve().parent.parent / "protos"
BUF = PROTOS / "node_modules" / ".bin" / "buf"


def buf(*args: str, cwd: Path = PROTOS) -> subprocess.CompletedProcess[str]:
    if not BUF.exists():
        if os.environ.get("CI"):
            pytest.fail("buf is not installed: run `npm ci` in protos/ (./dev test does)")
        pytest.skip("buf is not installed (npm ci in protos/)")
    return subprocess.run([str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_lint_standard():
    result = buf("lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_format():
    result = buf("format", "--diff", "--exit-code")
    assert result.returncode == 0, result.stdout + result.stderr


def test_compatible_with_the_released_api():
    result = buf("breaking", "--against", "released/holistic-api.binpb")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("optional double confidence = 9;", "optional float confidence = 9;", "FIELD_WIRE_JSON_COMPATIBLE_TYPE"),
        ("string output = 6;", "string completion = 6;", "FIELD_SAME_JSON_NAME"),
        ("  Timing timing = 14;\n", "  reserved 14;\n", "FIELD_NO_DELETE"),
    ],
)
def test_the_check_catches_a_breaking_change(tmp_path, old, new, rule):
    copy = tmp_path / "protos"
    shutil.copytree(PROTOS, copy, ignore=shutil.ignore_patterns("node_modules"))
    path = copy / "holistic" / "v1" / "prediction.proto"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    result = buf("breaking", "--against", "released/holistic-api.binpb", "--error-format", "json", cwd=copy)
    assert result.returncode != 0
    assert rule in result.stdout + result.stderr
