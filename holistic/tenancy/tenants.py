"""Tenants: who a bearer token belongs to, and the namespace their models live in.

Tokens are stored hashed (sha256), in HOLISTIC_TOKENS and/or the file HOLISTIC_TOKENS_FILE, one entry
per line or comma: `<tenant>:sha256:<hex>`, or `<tenant>:sha256:<hex>:expires:<ISO 8601>` for a token
that stops working at that instant (refused like a revoked one); a bare token (development only)
belongs to the tenant "default". The file is re-read when it changes, so tokens rotate without a
restart. A tenant's model `m` is stored as `<tenant>|m` (the "default" tenant's as plain `m`), so one
tenant can never name, read, list or watch another's models: asking for them finds nothing.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from holistic.errors import ConfigError
from holistic.tenancy.watched_file import Recheck, stamp_to_read

log = logging.getLogger("holistic.tenancy.tenants")

DEFAULT_TENANT = "default"
SEPARATOR = "|"
TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
HASHED_RE = re.compile(r"(?P<tenant>[^:\s]+):sha256:(?P<hex>[0-9a-f]{64})(?::expires:(?P<expires>\S+))?")
RELOAD_EVERY_S = 0.25


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "hl_" + secrets.token_urlsafe(32)


def internal_model(tenant: str, model: str) -> str:
    """The name a tenant's model is stored under."""
    return model if tenant == DEFAULT_TENANT else f"{tenant}{SEPARATOR}{model}"


def split_model(internal: str) -> tuple[str, str]:
    """(tenant, model) of a stored model name."""
    tenant, sep, model = internal.partition(SEPARATOR)
    return (tenant, model) if sep else (DEFAULT_TENANT, internal)


def _expiry(text: str, where: str) -> float:
    """Epoch seconds of an ISO 8601 instant with its offset (e.g. 2027-01-01T00:00:00Z)."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: expires:{text} is not an ISO 8601 time") from exc
    if at.tzinfo is None:
        raise ConfigError(f"{where}: expires:{text} needs a UTC offset (e.g. Z)")
    return at.timestamp()


def parse_entries(text: str, where: str, expiries: dict[str, float] | None = None) -> dict[str, str]:
    """token sha256 -> tenant, from comma- or newline-separated entries; '#' starts a comment.

    An entry `<tenant>:sha256:<hex>:expires:<ISO 8601>` stops working at that instant; its expiry goes
    into `expiries` (sha256 -> epoch seconds)."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.replace(",", "\n").splitlines(), start=1):
        entry = raw.split("#", 1)[0].strip()
        if not entry:
            continue
        m = HASHED_RE.fullmatch(entry)
        if m:
            tenant, digest = m["tenant"], m["hex"]
            if m["expires"] is not None and expiries is not None:
                expiries[digest] = _expiry(m["expires"], f"{where}, entry {n}")
            elif m["expires"] is not None:
                _expiry(m["expires"], f"{where}, entry {n}")
        elif ":sha256:" in entry:
            raise ConfigError(f"{where}, entry {n}: expected <tenant>:sha256:<64 lowercase hex digits>")
        else:
            tenant, digest = DEFAULT_TENANT, hash_token(entry)
        if not TENANT_RE.fullmatch(tenant):
            raise ConfigError(f"{where}, entry {n}: tenant must match {TENANT_RE.pattern}")
        out[digest] = tenant
    return out


def first_bare_token(entries: str) -> str | None:
    """The first entry given in clear (development setups), if any: hashed entries cannot be used."""
    for raw in entries.replace(",", "\n").splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry and ":sha256:" not in entry:
            return entry
    return None


@dataclass
class TokenStore:
    """Token hashes of the environment and of a file that is re-read when it changes."""

    env_entries: str = ""
    path: Path | None = None
    _hashes: dict[str, str] = field(default_factory=dict)
    _expiries: dict[str, float] = field(default_factory=dict)
    _stamp: tuple[float, int] | None = None
    _recheck: Recheck = field(default_factory=lambda: Recheck(RELOAD_EVERY_S))

    def __post_init__(self) -> None:
        self.reload(force=True)

    @property
    def open(self) -> bool:
        """No tokens at all: every caller is the default tenant."""
        return not self._hashes

    def reload(self, force: bool = False) -> None:
        stamp = None
        if self.path is not None:
            stamp = stamp_to_read(self.path, "HOLISTIC_TOKENS_FILE", "tokens", self._stamp, force, log)
            if stamp is None:
                return
        expiries: dict[str, float] = {}
        hashes = parse_entries(self.env_entries, "HOLISTIC_TOKENS", expiries)
        if self.path is not None:
            try:
                hashes.update(parse_entries(self.path.read_text(), str(self.path), expiries))
            except ConfigError:
                if force:
                    raise
                log.exception("tokens file %s is invalid; keeping the tokens loaded before", self.path)
                return
        if not force:
            log.info(
                "tokens file %s changed: %d tokens for %d tenants", self.path, len(hashes), len(set(hashes.values()))
            )
        self._hashes, self._expiries, self._stamp = hashes, expiries, stamp

    def tenant_of(self, token: str) -> str | None:
        """The token's tenant, or None for an unknown, revoked or expired token. Picks up file changes
        within RELOAD_EVERY_S."""
        if self.path is not None:
            self._recheck(self.reload)
        if not token:
            return None
        digest = hash_token(token)
        expires = self._expiries.get(digest)
        if expires is not None and time.time() >= expires:
            return None
        return self._hashes.get(digest)

    def tenants(self) -> set[str]:
        return set(self._hashes.values()) or {DEFAULT_TENANT}
