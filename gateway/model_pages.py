"""ListModels's pages (AIP-158): the page size a request may ask for, and page tokens.

A token names the last model of the page before, so the next page starts after it in name order
(the tenant's model index, holistic/redis/keys.py `models_index`): models added between two pages are listed
once if they sort after the token and not at all on pages already read, and no model is listed twice.
A token carries a version byte so that a later format can refuse an old token by name rather than
misread it. It is opaque to callers and tells them nothing new (a model name of their own tenant, or any
name they made up: a listing only ever reads the caller's tenant).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from holistic.errors import FieldViolation, InvalidArgument

TOKEN_VERSION = b"\x01"
MAX_TOKEN_CHARS = 1024  # base64 of a version byte and a model name (the gateway's names are far shorter)


@dataclass(frozen=True)
class Page:
    """What one ListModels call reads: at most `size` models, those after `after` (None: from the first)."""

    size: int
    after: bytes | None


def page_of(page_size: int, page_token: str, most: int) -> Page:
    """The request's page, checked before anything is read; a size past `most` is lowered to it."""
    if page_size < 0:
        why = f"must be 0 (the server's maximum) or more, not {page_size}"
        raise InvalidArgument([FieldViolation("page_size", why)])
    size = most if page_size == 0 else min(page_size, most)
    return Page(size, decode_token(page_token) if page_token else None)


def encode_token(last: bytes) -> str:
    return base64.urlsafe_b64encode(TOKEN_VERSION + last).decode().rstrip("=")


def decode_token(token: str) -> bytes:
    bad = InvalidArgument([FieldViolation("page_token", "is not a next_page_token of ListModels")])
    if len(token) > MAX_TOKEN_CHARS:
        raise bad
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad from exc
    if not raw.startswith(TOKEN_VERSION) or len(raw) == len(TOKEN_VERSION):
        raise bad
    return raw[len(TOKEN_VERSION) :]
