"""The C JSON line encoder on raw bytes: UTF-8 as strictly as Python's decoder, files read alike with
and without it, lines of any size. (tests/clients/test_prediction_json.py holds its bytes to
json_format's on every JSON case; this file covers what only bytes can say.)"""

from __future__ import annotations

import gzip
import json

import pytest
from google.protobuf import json_format

from holistic.v1.prediction_pb2 import Prediction
from holistic_client import jsonl
from holistic_client.json_wire import encoder
from holistic_client.jsonl import read_predictions
from tests.clients.test_prediction_json import SAMPLE, needs_c

ENCODE = encoder(Prediction.DESCRIPTOR, "model")
pytestmark = needs_c  # and a failure under CI (test_prediction_json) where it is not built


def canonical(raw: bytes) -> bytes:
    return json_format.Parse(raw.decode("utf-8"), Prediction()).SerializeToString(deterministic=True)


# every boundary of UTF-8's ranges, and the sequences Python's strict decoder refuses
VALID = ["\x7f", "\u0080", "\u07ff", "\u0800", "\u0fff", "\u1000", "\ud7ff", "\ue000", "\uffff", "\U00010000",
         "\U0003ffff", "\U00040000", "\U000fffff", "\U00100000", "\U0010ffff", "é😀中"]  # fmt: skip
INVALID = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2", b"\xc2\x41", b"\xe0\x80\x80", b"\xe0\x9f\xbf",
           b"\xe1\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf",
           b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xfe", b"\xf0\x90\x80", b"\xe2\x82"]  # fmt: skip


@pytest.mark.parametrize("where", ["output", "groups key", "groups value", "references", "id"])
def test_utf8_as_python_decodes_it(where):
    def line(text_bytes: bytes) -> bytes:
        s = '"@"'
        body = {
            "output": f'{{"model": "m", "output": {s}}}',
            "groups key": f'{{"groups": {{{s}: "v"}}}}',
            "groups value": f'{{"groups": {{"k": {s}}}}}',
            "references": f'{{"references": ["a", {s}]}}',
            "id": f'{{"id": {s}, "model": {s}}}',
        }[where]
        return body.encode().replace(b"@", b"a" + text_bytes + b"z")

    for ch in VALID:
        raw = line(ch.encode("utf-8"))
        got = ENCODE(raw)
        assert got is not None and got[0] == canonical(raw), (where, ch)
        if where == "id":
            assert got[1] == f"a{ch}z"
    for bad in INVALID:
        raw = line(bad)
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
        assert ENCODE(raw) is None, (where, bad)
        parsed = jsonl._parse_line(7, raw)
        assert parsed.data is None and parsed.error.startswith("not valid UTF-8 at byte")


def test_escapes_and_structure_outside_strings():
    for raw, sure in [
        (b'{"output": "\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/\\b\\f\\r\\u0000"}', True),
        (b'{"output": "\\uD83D\\uDE00", "model": "\\u006d"}', True),
        (b'{"\\u006fut\\u0070ut": "x"}', True),  # an escaped key names the field
        (b'  {"output" :"x" } \r\n', True),
        (b'{"output": "\\ud83d"}', False),  # lone high surrogate
        (b'{"output": "\\ude00x"}', False),  # lone low surrogate
        (b'{"output": "\\ud83d\\u0041"}', False),
        (b'{"output": "\\x41"}', False),
        (b'{"output": "a\tb"}', False),  # a raw control character: json refuses it
        (b'{"output": "x"} {}', False),
        (b'\xef\xbb\xbf{"output": "x"}', False),  # a byte-order mark
        (b'{"output": "x",}', False),
        (b'{"confidence": 01}', False),
        (b'{"confidence": -}', False),
        (b'{"confidence": 1.}', False),
        (b'{"confidence": .5}', False),
        (b'{"confidence": 1e}', False),
        (b'{"confidence": 1E+2}', True),
        (b'{"confidence": -0}', True),  # an int first: +0.0, present
        (b'{"confidence": -0.0}', True),
        (b'{"confidence": 1e-400}', True),
        (b'{"confidence": 1e400}', False),
        (b'{"confidence": ' + b"1" * 65 + b"}", False),  # long numbers: Python
    ]:
        got = ENCODE(raw)
        assert (got is not None) == sure, raw
        if sure:
            assert got[0] == canonical(raw), raw


def test_a_huge_line_then_small_ones():
    big = json.dumps({"model": "m", "output": "é" * 3_000_000, "references": ["x" * 100_000] * 20}).encode()
    got = ENCODE(big)
    assert got is not None and got[0] == canonical(big) and got[1] == "m"
    small = b'{"model": "m2", "output": "o"}'
    assert ENCODE(small) == (canonical(small), "m2")


def test_files_read_the_same_without_the_c_module(tmp_path, monkeypatch):
    with gzip.open(SAMPLE, "rb") as fh:
        body = b"".join(fh.read().splitlines(keepends=True)[:1500])
    body += b'{"task": 6}\n{"id": "\xff"}\n{not json\n'
    body += b'{"timing": {"latency": "-1s"}}\n{"groups": {"a": "1", "a": "2"}}\n'
    path = tmp_path / "p.jsonl"
    path.write_bytes(body)

    def seen() -> list[tuple[int, bytes | None, str, str]]:
        return [(x.number, x.data, x.model, x.error) for x in read_predictions(path)]

    with_c = seen()
    monkeypatch.setattr(jsonl, "_ENCODE", None)
    without = seen()
    assert with_c == without
    assert len(with_c) == 1505 and sum(1 for x in with_c if x[1] is None) == 3  # {"task": 6} is accepted
    fast = sum(1 for line in body.splitlines() if ENCODE(line) is not None)
    assert fast == 1500  # the demo's lines in C; the odd ones in Python, with json_format's answer


def test_a_line_s_prediction_is_decoded_from_its_bytes():
    raw = b'{"id": "a", "model": "m", "groups": {"z": "1", "a": "2"}, "producedAt": "2026-11-01T00:00:01.5Z"}'
    line = jsonl._parse_line(3, raw)
    assert line.model == "m" and line.data == canonical(raw)
    assert line.prediction == json_format.Parse(raw.decode(), Prediction())
    assert line.prediction is line.prediction  # decoded once


def test_the_reader_takes_the_c_path_for_plain_lines(tmp_path, monkeypatch):
    class Refuse:
        def parse(self, text: str) -> Prediction:
            raise AssertionError("a plain line went to the Python parser")

    with gzip.open(SAMPLE, "rb") as fh:
        (tmp_path / "p.jsonl").write_bytes(b"".join(fh.read().splitlines(keepends=True)[:300]))
    monkeypatch.setattr(jsonl, "_PARSER", Refuse())
    lines = list(read_predictions(tmp_path / "p.jsonl"))
    assert len(lines) == 300 and all(line.data for line in lines)


@pytest.mark.parametrize(
    "stamp",
    ["1900-02-29T00:00:00Z", "2100-02-29T12:00:00Z", "2000-02-29T23:59:59.5Z", "2024-02-29T00:00:00Z",
     "1600-02-29T00:00:00Z", "1969-12-31T23:59:59.999999999Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
     "2026-04-31T00:00:00Z", "2026-06-30T00:00:00.1Z"],
)  # fmt: skip
def test_calendar_days_as_json_format_counts_them(stamp):
    raw = json.dumps({"producedAt": stamp}).encode()
    try:
        expected = canonical(raw)
    except json_format.ParseError:
        assert ENCODE(raw) is None
        return
    assert ENCODE(raw) == (expected, "")


def test_a_changed_prediction_is_what_is_sent(tmp_path):
    """The demo moves produced_at on the lines it read: data and model follow the message once it was
    asked for (a line's bytes from C must not hide the change)."""
    from tests.clients.batch_ids import _Recorder

    with gzip.open(SAMPLE, "rb") as fh:
        (tmp_path / "p.jsonl").write_bytes(b"".join(fh.read().splitlines(keepends=True)[:40]))
    lines = list(read_predictions(tmp_path / "p.jsonl"))
    untouched = lines[1].data
    for line in lines[:20]:
        assert line.prediction is not None
        line.prediction.produced_at.seconds += 3600
        line.prediction.model = "moved"
    assert all(Prediction.FromString(line.data).model == "moved" for line in lines[:20])
    assert lines[0].model == "moved" and lines[25].model != "moved" and lines[1].data != untouched
    changed = Prediction.FromString(lines[0].data)
    assert (
        changed.produced_at.seconds
        == json_format.Parse(
            (tmp_path / "p.jsonl").read_bytes().splitlines()[0].decode(), Prediction()
        ).produced_at.seconds
        + 3600
    )
    # and the client sends them so: the moved lines make a batch of their own, under their new model
    with _Recorder() as recorder:
        report = recorder.submit_lines(lines, batch_size=500)
    assert not report.rejected and ("20", "moved") in {(n, m) for _, n, m in recorder.sent}
