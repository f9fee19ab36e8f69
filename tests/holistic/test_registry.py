"""The registry reads the installed entry points once, and again when the import path changes.

Reading them opens every installed distribution's metadata: before they were kept, that was most of
a profile fold's CPU in a deployment of some families (the noisy-neighbour test's gateway).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from holistic.families import registry

BUILTIN = {"accuracy", "bias", "calibration", "efficiency", "fairness", "retrieval", "robustness"}


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reads of the entry points, from an empty cache."""
    counted: list[int] = []
    real = registry.entry_points

    def counting(**kw: str):  # type: ignore[no-untyped-def]
        counted.append(1)
        return real(**kw)

    monkeypatch.setattr(registry, "entry_points", counting)
    monkeypatch.setattr(registry, "_scanned", None)
    return counted


def settled(path: Path) -> None:
    """Modified an hour ago, as by an install long ago."""
    past = time.time() - 3600
    os.utime(path, (past, past))


def distribution(site: Path, name: str) -> None:
    """A distribution installed into `site` registering family `name`, as pip writes it."""
    info = site / f"holistic_{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: holistic-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[holistic.families]\n{name} = holistic_{name}:FAMILY\n")


def test_the_entry_points_are_read_once_while_the_import_path_is_unchanged(scans, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    settled(site)
    monkeypatch.syspath_prepend(str(site))
    for _ in range(50):
        assert set(registry.installed()) >= BUILTIN
        assert registry.is_installed("accuracy")
    assert len(scans) == 1


def test_a_distribution_installed_later_is_found_on_the_next_lookup(scans, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    settled(site)
    monkeypatch.syspath_prepend(str(site))
    assert "astrology" not in registry.installed()
    distribution(site, "astrology")  # the directory's mtime moves: the next lookup reads again
    assert "astrology" in registry.installed()
    assert len(scans) == 2
    settled(site)
    assert "astrology" in registry.installed()  # a changed mtime is a change too
    assert len(scans) == 3
    with pytest.raises(registry.UnknownFamily, match="'nostradamus' is not installed; installed: accuracy, astrology"):
        registry.load_family("nostradamus")


def test_a_path_entry_added_or_removed_is_read_again(scans, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    distribution(site, "astrology")
    settled(site)
    assert "astrology" not in registry.installed()
    monkeypatch.syspath_prepend(str(site))
    assert "astrology" in registry.installed()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(site)])
    assert "astrology" not in registry.installed()
    assert len(scans) == 3
