"""Both toy plugin families (tests/plugin_family, tests/plugin_family_two) installed as a contributor
would: built from their pyproject.toml into one throwaway directory, found by their entry points."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holistic.families import registry

HERE = Path(__file__).parent
PLUGINS = {"hallucination": HERE / "plugin_family", "brevity": HERE / "plugin_family_two"}
MODULES = ("holistic_hallucination", "holistic_brevity")


@pytest.fixture(scope="module")
def plugins_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("plugins-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), *map(str, PLUGINS.values())],
        check=True, capture_output=True,
    )  # fmt: skip
    return site


@pytest.fixture
def two_plugins(plugins_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The two plugins importable in this process and its children; forgotten afterwards."""
    monkeypatch.syspath_prepend(str(plugins_site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins_site), os.environ.get("PYTHONPATH", "")]))
    yield plugins_site
    for name in PLUGINS:
        registry._loaded.pop(name, None)
    for name in [m for m in sys.modules if m.startswith(MODULES)]:
        del sys.modules[name]
