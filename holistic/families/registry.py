"""The installed metric families, found through the `holistic.families` entry-point group.

The built-in families are registered the same way, in pyproject.toml; a plugin is one distribution
with one entry point `<name> = "<module>:<object>"`, where the object is a Family (or a class of one).

Reading the entry points opens every installed distribution's metadata (milliseconds: it was most of
a profile fold's CPU where some of HELM's axes come from families not deployed), so they are read
once and again only when the import path changes: an entry of sys.path added, removed, or modified
(installing a distribution adds its .dist-info directory, which changes its parent's mtime). So a
family installed while a gateway runs is still found without a restart. (importlib.metadata keys its
own directory listings on the same mtimes.)
"""

from __future__ import annotations

import os
import sys
import threading
from importlib.metadata import EntryPoint, entry_points

from holistic.errors import ConfigError
from holistic.families import Family

GROUP = "holistic.families"

_loaded: dict[str, Family] = {}
_lock = threading.Lock()
_scanned: tuple[tuple[tuple[str, int], ...], dict[str, EntryPoint]] | None = None  # (path state, entry points)


class UnknownFamily(ConfigError, KeyError):
    """A name that no installed distribution registers."""

    def __str__(self) -> str:
        return str(self.args[0])


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each import path entry with its mtime (-1: missing or unreadable): what the entry points depend on."""
    state = []
    for entry in sys.path:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except (OSError, ValueError):
            mtime = -1
        state.append((entry, mtime))
    return tuple(state)


def _entry_points() -> dict[str, EntryPoint]:
    global _scanned
    state = _path_state()
    scanned = _scanned
    if scanned is not None and scanned[0] == state:
        return scanned[1]
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    _scanned = (state, found)
    return found


def installed() -> list[str]:
    """Names of the installed families, sorted."""
    return sorted(_entry_points())


def is_installed(name: str) -> bool:
    return name in _loaded or name in _entry_points()


def load_family(name: str) -> Family:
    """The family registered under `name`, loaded once per process."""
    family = _loaded.get(name)
    if family is not None:
        return family
    with _lock:
        if name in _loaded:
            return _loaded[name]
        eps = _entry_points()
        if name not in eps:
            raise UnknownFamily(
                f"metric family {name!r} is not installed; installed: {', '.join(sorted(eps)) or 'none'}"
            )
        obj = eps[name].load()
        family = obj() if isinstance(obj, type) else obj
        if not isinstance(family, Family) or family.name != name:
            raise ConfigError(
                f"entry point {name!r} = {eps[name].value!r} in group {GROUP} is not a Family named {name!r}"
            )
        _loaded[name] = family
        return family


def select(names: list[str]) -> list[str]:
    """The families a process runs: `names` (HOLISTIC_FAMILIES) checked against what is installed,
    or every installed family when it is empty."""
    available = installed()
    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise UnknownFamily(
            f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not installed; "
            f"installed: {', '.join(available) or 'none'}"
        )
    return list(dict.fromkeys(names))
