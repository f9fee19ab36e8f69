"""The installed metric families, found through the `holistic.families` entry-point group.

The built-in families are registered the same way, in pyproject.toml; a plugin is one distribution
with one entry point `<name> = "<module>:<object>"`, where the object is a Family (or a class of one).
Entry points are read again on each lookup of a name not seen before, so a family installed while a
gateway runs is found without a restart.
"""

from __future__ import annotations

import threading
from importlib.metadata import EntryPoint, entry_points

from holistic.errors import ConfigError
from holistic.families import Family

GROUP = "holistic.families"

_loaded: dict[str, Family] = {}
_lock = threading.Lock()


class UnknownFamily(ConfigError, KeyError):
    """A name that no installed distribution registers."""

    def __str__(self) -> str:
        return str(self.args[0])


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


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
