"""Retention per tenant: how long a tenant's raw text and each statistics tier may stay.

The file HOLISTIC_RETENTION_FILE (TOML) holds one table per tenant that keeps less than the global settings:

    [tenants.team-a]
    raw_text = "2d"     # stream entries, dead letters and per-instance state
    minute = "1d"       # minute buckets
    hour = "30d"        # hour buckets
    day = "365d"        # day buckets (16- and 256-day buckets and the all-time totals stay, as for everyone)

A value is seconds (an integer) or a number with s, m, h or d. A tenant's value may only shorten what the
global settings keep (HOLISTIC_MINUTE_RETENTION_S, HOLISTIC_HOUR_RETENTION_S; raw text and day buckets have
no global limit), never lengthen it: a longer one is refused, naming the line, so no one believes data is
kept that the global TTLs remove. The file is re-read when it changes; an invalid file keeps the retention
loaded before (logged), and stops the process at start.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from holistic.errors import ConfigError
from holistic.settings import Settings
from holistic.tenancy.tenants import TENANT_RE, split_model
from holistic.tenancy.watched_file import Recheck, stamp_to_read

log = logging.getLogger("holistic.tenancy.retention")

RELOAD_EVERY_S = 1.0
FIELDS = ("raw_text", "minute", "hour", "day")
_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


@dataclass(frozen=True)
class Retention:
    """Seconds each kind of data stays; None: no limit beyond the global settings."""

    raw_text_s: int | None
    minute_s: int
    hour_s: int
    day_s: int | None

    def tier_ttl(self, tier: str) -> int:
        """The TTL a statistics bucket of `tier` gets when written; 0: kept for good."""
        return {"m": self.minute_s, "h": self.hour_s, "d": self.day_s or 0}.get(tier, 0)

    def as_dict(self) -> dict[str, int | None]:
        return asdict(self)


def defaults(settings: Settings) -> Retention:
    return Retention(None, settings.minute_retention_s, settings.hour_retention_s, None)


def _seconds(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f'{where}: expected seconds or a duration such as "30d", got {value!r}')
    if isinstance(value, int):
        seconds = value
    else:
        m = _DURATION.fullmatch(value.strip())
        if m is None:
            raise ConfigError(f'{where}: {value!r} is not a duration (a number with s, m, h or d, e.g. "30d")')
        seconds = round(float(m["n"]) * _UNIT[m["unit"]])
    if seconds < 1:
        raise ConfigError(f"{where}: must be at least 1 second")
    return seconds


def _line_of(text: str, tenant: str, name: str | None = None) -> int:
    """The line of `[tenants.<tenant>]` (or of `name = ` inside it), for error messages."""
    lines = text.splitlines()
    header = re.compile(r"\s*\[\s*tenants\s*\.\s*\"?" + re.escape(tenant) + r"\"?\s*\]")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return 0
    if name is not None:
        for i in range(start + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if re.match(r"\s*" + re.escape(name) + r"\s*=", lines[i]):
                return i + 1
    return start + 1


def parse(text: str, where: str, settings: Settings) -> dict[str, Retention]:
    """tenant -> its retention, from the file's text; ConfigError naming the line and field of a bad value."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    unknown = sorted(set(doc) - {"tenants"})
    if unknown:
        raise ConfigError(f"{where}: unknown table(s) {unknown}; per-tenant entries go under [tenants.<tenant>]")
    tenants = doc.get("tenants", {})
    if not isinstance(tenants, dict):
        raise ConfigError(f"{where}: `tenants` must be a table of [tenants.<tenant>] tables")
    base = defaults(settings)
    out: dict[str, Retention] = {}
    for tenant, entry in tenants.items():
        at = f"{where}, line {_line_of(text, tenant)}, [tenants.{tenant}]"
        if not TENANT_RE.fullmatch(tenant):
            raise ConfigError(f"{at}: tenant must match {TENANT_RE.pattern}")
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: expected a table with {', '.join(FIELDS)}")
        extra = sorted(set(entry) - set(FIELDS))
        if extra:
            raise ConfigError(f"{at}: unknown field(s) {extra}; known: {', '.join(FIELDS)}")
        got = {n: _seconds(v, f"{where}, line {_line_of(text, tenant, n)}, tenants.{tenant}.{n}")
               for n, v in entry.items()}  # fmt: skip
        for name, limit, variable in (
            ("minute", base.minute_s, "HOLISTIC_MINUTE_RETENTION_S"),
            ("hour", base.hour_s, "HOLISTIC_HOUR_RETENTION_S"),
        ):
            if got.get(name, 0) > limit:
                raise ConfigError(
                    f"{where}, line {_line_of(text, tenant, name)}, tenants.{tenant}.{name}: {got[name]} s is longer "
                    f"than {variable} ({limit} s); a tenant's retention may only shorten the global one"
                )
        retention = Retention(got.get("raw_text"), got.get("minute", base.minute_s), got.get("hour", base.hour_s),
                              got.get("day"))  # fmt: skip
        day = retention.day_s if retention.day_s is not None else retention.hour_s
        if not retention.minute_s <= retention.hour_s <= day:
            raise ConfigError(f"{at}: each tier must be kept at least as long as a finer one (minute <= hour <= day)")
        out[tenant] = retention
    return out


@dataclass
class RetentionStore:
    """The retention file, re-read when it changes (at most every RELOAD_EVERY_S), over the global defaults."""

    settings: Settings
    _by_tenant: dict[str, Retention] = field(default_factory=dict)
    _stamp: tuple[float, int] | None = None
    _recheck: Recheck = field(default_factory=lambda: Recheck(RELOAD_EVERY_S))

    def __post_init__(self) -> None:
        self.default = defaults(self.settings)
        self.reload(force=True)

    @property
    def path(self) -> Path | None:
        return self.settings.retention_file

    def reload(self, force: bool = False) -> None:
        if self.path is None:
            return
        stamp = stamp_to_read(self.path, "HOLISTIC_RETENTION_FILE", "retention", self._stamp, force, log)
        if stamp is None:
            return
        try:
            by_tenant = parse(self.path.read_text(), str(self.path), self.settings)
        except ConfigError:
            if force:
                raise
            log.exception("retention file %s is invalid; keeping the retention loaded before", self.path)
            return
        if not force:
            log.info("retention file %s changed: %d tenant(s) with their own retention", self.path, len(by_tenant))
        self._by_tenant, self._stamp = by_tenant, stamp

    def _fresh(self) -> None:
        if self.path is not None:
            self._recheck(self.reload)

    def of(self, tenant: str) -> Retention:
        self._fresh()
        return self._by_tenant.get(tenant, self.default)

    def of_model(self, model: str) -> Retention:
        """The retention of a stored model name's tenant."""
        return self.of(split_model(model)[0])

    def tenants(self) -> dict[str, Retention]:
        """The tenants with their own retention."""
        self._fresh()
        return dict(self._by_tenant)
