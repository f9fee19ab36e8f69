"""The one rule for re-reading the tokens and the retention file: read when forced or changed, keep what was
loaded when the file disappears, and refuse a missing file at start."""

from __future__ import annotations

import logging
import os

import pytest

from holistic.errors import ConfigError
from holistic.tenancy.tenants import TokenStore
from holistic.tenancy.watched_file import stamp_to_read

log = logging.getLogger("test.watched_file")


def test_read_when_forced_or_changed_never_when_unchanged(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("a")
    first = stamp_to_read(f, "HOLISTIC_TOKENS_FILE", "tokens", None, False, log)
    assert first == (os.stat(f).st_mtime, 1)
    assert stamp_to_read(f, "HOLISTIC_TOKENS_FILE", "tokens", first, False, log) is None
    assert stamp_to_read(f, "HOLISTIC_TOKENS_FILE", "tokens", first, True, log) == first
    f.write_text("ab")  # a new size: changed even within the clock's resolution
    assert stamp_to_read(f, "HOLISTIC_TOKENS_FILE", "tokens", first, False, log)[1] == 2


def test_a_vanished_file_keeps_what_was_loaded_and_a_missing_one_is_refused_at_start(tmp_path, caplog):
    gone = tmp_path / "retention.toml"
    with caplog.at_level(logging.ERROR, logger="test.watched_file"):
        assert stamp_to_read(gone, "HOLISTIC_RETENTION_FILE", "retention", (1.0, 3), False, log) is None
    assert "retention file" in caplog.text and "keeping the retention loaded before" in caplog.text
    with pytest.raises(ConfigError, match=r"HOLISTIC_RETENTION_FILE .* does not exist"):
        stamp_to_read(gone, "HOLISTIC_RETENTION_FILE", "retention", None, True, log)


def test_the_token_store_keeps_its_tokens_when_the_file_disappears(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("team-a:sha256:" + "0" * 64 + "\n")
    store = TokenStore(path=f)
    store.reload(force=True)
    assert not store.open
    f.unlink()
    store.reload()
    assert not store.open  # a deleted file never opens the gateway to every caller
