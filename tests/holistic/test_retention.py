"""The retention file (holistic/tenancy/retention.py): per-tenant limits over the global ones, refused when longer,
each error naming its line and field; re-read on change, an invalid change keeping the retention before."""

from __future__ import annotations

import os

import pytest

from holistic.errors import ConfigError
from holistic.settings import load_settings
from holistic.tenancy.retention import Retention, RetentionStore, parse

SETTINGS = load_settings(minute_retention_s=3 * 86_400, hour_retention_s=400 * 86_400)

GOOD = """\
# the team's contract: two days of raw text
[tenants.team-a]
raw_text = "2d"
minute = "36h"
hour = 2592000
day = "31d"

[tenants.team-b]
hour = "10d"
"""


def test_values_are_seconds_or_durations_and_unset_fields_keep_the_global_retention():
    got = parse(GOOD, "f.toml", SETTINGS)
    assert got["team-a"] == Retention(raw_text_s=172_800, minute_s=129_600, hour_s=2_592_000, day_s=2_678_400)
    # team-b names only the hour tier: minute as HOLISTIC_MINUTE_RETENTION_S, raw text and days unlimited
    assert got["team-b"] == Retention(raw_text_s=None, minute_s=259_200, hour_s=864_000, day_s=None)
    assert got["team-a"].tier_ttl("m") == 129_600 and got["team-a"].tier_ttl("d") == 2_678_400
    assert got["team-b"].tier_ttl("d") == 0 and got["team-b"].tier_ttl("d16") == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[tenants.team-a]\nminute = "4d"\n',
            "f.toml, line 2, tenants.team-a.minute: 345600 s is longer than HOLISTIC_MINUTE_RETENTION_S (259200 s)",
        ),
        (
            '[tenants.team-a]\nraw_text = "2d"\n\n[tenants.team-b]\nhour = "401d"\n',
            "f.toml, line 5, tenants.team-b.hour: 34646400 s is longer than HOLISTIC_HOUR_RETENTION_S",
        ),
        (
            '[tenants.team-a]\nraw_text = "2 weeks"\n',
            "f.toml, line 2, tenants.team-a.raw_text: '2 weeks' is not a duration",
        ),
        ("[tenants.team-a]\nraw_text = 0\n", "f.toml, line 2, tenants.team-a.raw_text: must be at least 1 second"),
        ('[tenants.team-a]\nraw = "2d"\n', "f.toml, line 1, [tenants.team-a]: unknown field(s) ['raw']"),
        ('[tenants.Team_A]\nraw_text = "2d"\n', "f.toml, line 1, [tenants.Team_A]: tenant must match"),
        ('[tenants.team-a]\nminute = "2d"\nhour = "1d"\n', "[tenants.team-a]: each tier must be kept at least"),
        ('[tenant.team-a]\nraw_text = "2d"\n', "f.toml: unknown table(s) ['tenant']"),
        ('[tenants.team-a]\nraw_text = "2d\n', "f.toml: "),  # TOML's own message, with its line
    ],
)
def test_a_bad_file_is_refused_naming_its_line_and_field(text, message):
    with pytest.raises(ConfigError) as exc:
        parse(text, "f.toml", SETTINGS)
    assert message in str(exc.value)


def test_the_file_is_re_read_on_change_and_an_invalid_change_keeps_what_was_loaded(tmp_path):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nraw_text = "1h"\n')
    store = RetentionStore(load_settings(retention_file=path))
    assert store.of("team-a").raw_text_s == 3600 and store.of("team-b").raw_text_s is None
    assert store.of_model("team-a|gpt-x").raw_text_s == 3600 and store.of_model("gpt-x") == store.default

    path.write_text('[tenants.team-a]\nraw_text = "2h"\n')
    os.utime(path, (1, 1))  # a new stamp, whatever the file system's clock resolution
    store._recheck.checked = 0.0
    assert store.of("team-a").raw_text_s == 7200

    path.write_text('[tenants.team-a]\nraw_text = "soon"\n')
    os.utime(path, (2, 2))
    store._recheck.checked = 0.0
    assert store.of("team-a").raw_text_s == 7200  # the invalid file is logged, the retention before kept

    with pytest.raises(ConfigError, match="does not exist"):
        RetentionStore(load_settings(retention_file=tmp_path / "missing.toml"))
    path.write_text('[tenants.team-a]\nminute = "9d"\n')
    with pytest.raises(ConfigError, match="longer than HOLISTIC_MINUTE_RETENTION_S"):
        RetentionStore(load_settings(retention_file=path))  # at start, an invalid file stops the process
