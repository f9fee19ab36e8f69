"""The fast JSON line parsers answer exactly as json_format.Parse: the same message bytes, or the same error.

Two of them: prediction_json (Python, a dict to the message's constructor) and json_wire (C, the line
straight to deterministic wire bytes). Every case here holds both to json_format; the C one may also
say "not sure" (None), and then the Python one decides.
"""

from __future__ import annotations

import datetime
import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import holistic
from holistic.v1.prediction_pb2 import Prediction
from holistic_client import jsonl
from holistic_client.json_wire import encoder
from holistic_client.jsonl import read_predictions
from holistic_client.prediction_json import JsonParser

PARSER = JsonParser(Prediction)
ENCODE = encoder(Prediction.DESCRIPTOR, "model")
if ENCODE is None and os.environ.get("CI"):  # ./dev and any pip install build it; CI must test it
    pytest.fail("holistic_client/_jsonline.c is not built (tools/build_native.py)", pytrace=False)
needs_c = pytest.mark.skipif(ENCODE is None, reason="holistic_client/_jsonline.c is not built (no C compiler)")
SAMPLE = Path(holistic.__file__).parent / "data" / "demo_predictions.jsonl.gz"


def outcome(parse: Any, text: str) -> tuple[str, bytes | str]:
    try:
        return "ok", parse(text).SerializeToString(deterministic=True)
    except json_format.ParseError as exc:
        return "error", str(exc)


def reference(text: str) -> Prediction:
    return json_format.Parse(text, Prediction())


def wire_outcome(text: str) -> tuple[str, bytes, str] | None:
    """The C encoder's answer for text as a file's bytes: None (not sure) or ("ok", bytes, model).
    A text with a lone surrogate is not UTF-8 in a file: its bytes (surrogatepass) must be refused."""
    if ENCODE is None:  # not built (outside CI): the Python parser's cases still run
        return None
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        assert ENCODE(text.encode("utf-8", "surrogatepass")) is None, text
        return None
    got = ENCODE(raw + b"\n")
    return None if got is None else ("ok", *got)


def assert_same(text: str) -> bool:
    """Both fast parsers agree with json_format; True when the C encoder was sure."""
    expected = outcome(reference, text)
    assert outcome(PARSER.parse, text) == expected, text
    wire = wire_outcome(text)
    if wire is None:
        return False
    assert wire[:2] == expected, text
    assert wire[2] == reference(text).model, text
    return True


# Well-formed values of each kind, in the canonical spelling (the fast path), and weird ones: the other
# spellings protobuf's JSON mapping accepts, near misses, and values of no kind at all.
ODD: list[Any] = [None, True, False, 0, -1, 2**70, 1.5, float("nan"), float("inf"), "NaN", "Infinity", "nan", "1e3"]
ODD += [" 7", "0x10", "1_0", "", "\ud800", "a\udc00", [], [1], {}, {"a": 1}]
odd = st.one_of(
    st.sampled_from(ODD),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
WEIRD_TEXT = ["\ud83d", "a\udc00b", "\ud800\ud800", 7, 1.5, True, ["a"], {"a": "b"}]
WEIRD_DOUBLE = [
    float("nan"),
    float("inf"),
    -float("inf"),
    10**400,
    -(10**400),
    True,
    "0.5",
    "NaN",
    "-Infinity",
    "1e999",
]
WEIRD_DOUBLE += ["Infinity", "nan", " 1", "", [1.0], {}]
WEIRD_UINT32 = [-1, 2**32, 2**64, 3.0, 3.5, "12", "-1", " 1", "1.0", True, 1e40, float("nan"), "", [1]]
WEIRD_BOOL = ["true", "false", 1, 0, 1.0, "", [True]]
WEIRD_TS = [
    "2026-11-01T02:56:01.1234567891Z", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
    "2026-11-31T00:00:00Z", "2026-11-01T24:00:00Z", "2026-11-01T23:60:00Z", "2026-11-01T23:59:60Z",
    "2026-11-01T23:59:61Z", "0000-01-01T00:00:00Z", "2026-11-01t02:56:01Z", "2026-11-01T02:56:01+01:00",
    "2026-11-01T02:56:01.5-05:30", "2026-11-01T02:56:01.Z", "2026-11-01T02:56:01Zx", "2026-1-01T02:56:01Z",
    "2026-11-01T2:56:01Z", "٢٠٢٦-11-01T02:56:01Z", "2026-11-01T02:56:01", "2026-11-01 02:56:01Z", "",
    1762000000, {"seconds": 1}, None,
]  # fmt: skip
WEIRD_DURATION = [
    "-0.5s", "-1s", "1.s", ".5s", "1", "1e3s", "315576000001s", "315576000000.5s", "1.1234567891s", "+1s", " 1s",
    "1_0s", "0.9999999999s", "1.5S", "١s", "s", "", 1, 0.5, {"seconds": 1},
]  # fmt: skip
WEIRD_TASK = ["task_ranking", "TASK_NOPE", "6", "99", 6, 99, -1, 6.0, "", True, " 6"]
WEIRD_FAMILY = [2, "1", 7, "PERTURBATION_FAMILY_NOPE", "robustness", 1.0]
WEIRD_FORM = [2, "4", 9, "ORDER", -3]
WEIRD_MAP = [{"a": None}, {"a": 1}, {"a": "\ud800"}, {"\ud800": "a"}, {"": ""}, [], "a", {"a": {"b": "c"}}]
WEIRD_LIST = [[None], ["a", None], [1], "a", {}, [[]]]

good_text = st.one_of(st.text(max_size=12), st.sampled_from(["x", "é", "😀", "\ud83d\ude00", "a\x00b"]))
weird_text = st.one_of(st.sampled_from(WEIRD_TEXT), odd)
good_double = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**60), 2**60), st.just(-0.0), st.just(0)
)
weird_double = st.one_of(st.sampled_from(WEIRD_DOUBLE), odd)
good_uint32 = st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 2**32 - 1]))
weird_uint32 = st.one_of(st.sampled_from(WEIRD_UINT32), odd)
good_bool = st.booleans()
weird_bool = st.one_of(st.sampled_from(WEIRD_BOOL), odd)
good_ts = st.one_of(
    st.datetimes(min_value=datetime.datetime(1, 1, 1)).map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(
        [
            "2026-11-01T02:56:01.309Z",
            "2026-11-01T02:56:01Z",
            "2026-11-01T02:56:01.123456789Z",
            "2024-02-29T23:59:59.999999999Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999Z",
            "1969-12-31T23:59:59.5Z",
        ]
    ),
)
weird_ts = st.one_of(st.sampled_from(WEIRD_TS), odd)
good_duration = st.one_of(
    st.builds(
        lambda s, f: f"{s}{f}s",
        st.integers(0, 315_576_000_000),
        st.sampled_from(["", ".5", ".129", ".000000001", ".999999999", ".05", ".000", ".123456"]),
    ),
    st.sampled_from(["0s", "0.129s", "315576000000s", "315576000000.999999999s"]),
)
weird_duration = st.one_of(st.sampled_from(WEIRD_DURATION), odd)
good_task = st.sampled_from(["TASK_MULTIPLE_CHOICE", "TASK_RANKING", "TASK_UNSPECIFIED", "TASK_OPEN_QA"])
weird_task = st.one_of(st.sampled_from(WEIRD_TASK), odd)
good_family = st.sampled_from(["PERTURBATION_FAMILY_ROBUSTNESS", "PERTURBATION_FAMILY_FAIRNESS"])
weird_family = st.one_of(st.sampled_from(WEIRD_FAMILY), odd)
good_form = st.sampled_from(["RANKING_FORM_ORDER", "RANKING_FORM_SCORES", "RANKING_FORM_JUDGMENTS_ONLY"])
weird_form = st.one_of(st.sampled_from(WEIRD_FORM), odd)
good_map = st.dictionaries(good_text, good_text, max_size=3)
weird_map = st.one_of(
    st.dictionaries(good_text, st.one_of(good_text, weird_text), min_size=1, max_size=3),
    st.sampled_from(WEIRD_MAP),
    odd,
)


def listed(item: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(item, max_size=3)


def weird_list(item: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(st.one_of(item, st.none()), min_size=1, max_size=3), st.sampled_from(WEIRD_LIST), odd)


Field = tuple[str, st.SearchStrategy[Any], st.SearchStrategy[Any]]  # original name, good, weird


def message(*fields: Field) -> st.SearchStrategy[dict[str, Any]]:
    """A well-formed JSON object of these fields, each present or not, under either of its names."""

    def key(name: str, camel: bool) -> str:
        parts = name.split("_")
        return parts[0] + "".join(p.title() for p in parts[1:]) if camel else name

    parts = [st.one_of(st.just(None), st.tuples(st.just(name), st.booleans(), good)) for name, good, _ in fields]
    return st.tuples(*parts).map(lambda kvs: {key(n, c): v for n, c, v in filter(None, kvs)})


WEIRD: dict[str, st.SearchStrategy[Any]] = {}


def field(name: str, good: st.SearchStrategy[Any], weird: st.SearchStrategy[Any]) -> Field:
    for spelling in {name, name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])}:
        WEIRD[spelling] = weird
    return name, good, weird


def msg_field(name: str, *fields: Field, repeated: bool = False) -> Field:
    good = message(*fields)
    if repeated:
        return field(name, listed(good), st.one_of(weird_list(good), odd))
    return field(name, good, odd)


document = (
    field("id", good_text, weird_text),
    field("score", good_double, weird_double),
    field("model_output", good_text, weird_text),
    field("logprob", good_double, weird_double),
    field("relevance", good_double, weird_double),
    field("retriever_rank", good_uint32, weird_uint32),
)
predictions = message(
    field("id", good_text, weird_text),
    field("model", good_text, weird_text),
    field("scenario", good_text, weird_text),
    field("task", good_task, weird_task),
    field("input", good_text, weird_text),
    field("output", good_text, weird_text),
    field("references", listed(good_text), weird_list(good_text)),
    field("source", good_text, weird_text),
    field("confidence", good_double, weird_double),
    msg_field(
        "choice_probabilities",
        field("choice", good_text, weird_text),
        field("probability", good_double, weird_double),
        repeated=True,
    ),
    field("correct", good_bool, weird_bool),
    msg_field(
        "perturbation",
        field("name", good_text, weird_text),
        field("family", good_family, weird_family),
        field("original_id", good_text, weird_text),
    ),
    field("groups", good_map, weird_map),
    msg_field(
        "timing",
        field("latency", good_duration, weird_duration),
        field("time_to_first_token", good_duration, weird_duration),
        field("prompt_tokens", good_uint32, weird_uint32),
        field("completion_tokens", good_uint32, weird_uint32),
    ),
    field("produced_at", good_ts, weird_ts),
    field("metadata", good_map, weird_map),
    msg_field(
        "ranking",
        msg_field("documents", *document, repeated=True),
        field("order", listed(good_text), weird_list(good_text)),
        field("form", good_form, weird_form),
    ),
)


def objects(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in value, outermost first."""
    if isinstance(value, dict):
        return [value] + [o for v in value.values() for o in objects(v)]
    if isinstance(value, list):
        return [o for v in value for o in objects(v)]
    return []


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed prediction with (usually) one thing wrong somewhere, or spelled the other way."""
    value = draw(predictions)
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        target = draw(st.sampled_from(objects(value)))
        how = draw(st.sampled_from(["weird", "weird", "weird", "both", "unknown", "null"]))
        if not target or how == "unknown":
            target[draw(st.sampled_from(["nope", "Id", "ID", "produced_At", "@type", "[x.y]"]))] = draw(odd)
            continue
        key = draw(st.sampled_from(sorted(target)))
        if how == "weird":
            target[key] = draw(WEIRD.get(key, odd))
        elif how == "null":
            target[key] = None
        else:  # the same field under both its names (json_format: the second wins, or an error)
            snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
            camel = snake.split("_")[0] + "".join(p.title() for p in snake.split("_")[1:])
            target[camel if key == snake else snake] = draw(st.sampled_from([target[key], None]))
    return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def test_every_line_of_the_demo_sample_parses_to_the_same_message() -> None:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh]
    assert len(lines) > 7000
    sure = [assert_same(line) for line in lines]
    assert ENCODE is None or all(sure)  # every canonical line takes the C path where it is built


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans())
def test_random_objects_give_the_same_message_or_error(value: dict[str, Any], ascii_only: bool) -> None:
    assert_same(json.dumps(value, ensure_ascii=ascii_only, allow_nan=True))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@needs_c
@given(predictions, st.booleans(), st.booleans())
def test_well_formed_objects_take_the_c_path(value: dict[str, Any], ascii_only: bool, spaced: bool) -> None:
    """Plain values of every field, either name, any key order, whitespace: the C encoder is sure, and right."""
    for text in [
        json.dumps(value, ensure_ascii=ascii_only, indent=1 if spaced else None),
        json.dumps(dict(reversed(value.items())), ensure_ascii=ascii_only),  # the bytes still in field order
    ]:
        utf8 = text.encode("utf-8", "surrogatepass").decode("utf-8", "ignore") == text  # no lone surrogate
        # json_format refuses what it refuses (a key twice once both surrogate spellings are escaped alike)
        assert assert_same(text) == (utf8 and outcome(reference, text)[0] == "ok"), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.data())
def test_mangled_text_gives_the_same_message_or_error(value: dict[str, Any], data: st.DataObject) -> None:
    """Duplicate keys (json_format refuses them), cut lines, stray bytes, whitespace, non-objects."""
    text = dumps(value)
    how = data.draw(st.sampled_from(["dup", "cut", "insert", "space", "wrap", "top"]))
    if how == "dup" and value:
        key = data.draw(st.sampled_from(sorted(value)))
        text = text[:-1] + (", " if len(value) else "") + f"{json.dumps(key)}: {dumps(value[key])}" + "}"
    elif how == "cut":
        text = text[: data.draw(st.integers(0, len(text)))]
    elif how == "insert":
        at = data.draw(st.integers(0, len(text)))
        text = (
            text[:at]
            + data.draw(st.sampled_from(['"', ",", "}", "{", "\\", "\\u", "null", "NaN", "\ud800"]))
            + text[at:]
        )
    elif how == "space":
        text = " \t" + text.replace(":", " : ").replace(",", " ,\n") + " \r"
    elif how == "wrap":
        text = f'{{"perturbation": {text}}}'
    else:
        text = dumps(data.draw(st.one_of(st.lists(st.just(value), max_size=2), odd)))
    assert_same(text)


def test_hand_picked_spellings_that_only_json_format_parses() -> None:
    """Each takes the fallback; each is accepted or refused exactly as json_format decides."""
    for text in [
        '{"task": 6}',
        '{"task": "6"}',
        '{"timing": {"promptTokens": "12"}}',
        '{"timing": {"promptTokens": 12.0}}',
        '{"confidence": "NaN"}',
        '{"confidence": "0.5"}',
        '{"producedAt": "2026-11-01T02:56:01+01:00"}',
        '{"timing": {"latency": "-1.5s"}}',
        '{"id": null, "groups": null, "timing": null}',
        '{"perturbation": {"originalId": "a", "original_id": "b"}}',
        '{"source": "a", "source": "b"}',
        '{"references": ["a", null]}',
        '{"nope": 1}',
        '{"id": "\\ud800"}',
        '{"groups": {"a": 1}}',
        "[]",
        "",
    ]:
        assert_same(text)
    assert PARSER.parse('{"task": 6, "confidence": 0}').task == 6
    assert math.isclose(PARSER.parse('{"confidence": "0.25"}').confidence, 0.25)


# By JSON key (either spelling): the weird values tried in every place that key occurs in the sample.
WEIRD_BY_KEY: dict[str, list[Any]] = {}
for _kind, _keys in [
    (WEIRD_TEXT, "id model scenario input output source choice name original_id model_output"),
    (WEIRD_DOUBLE, "confidence probability score logprob relevance"),
    (WEIRD_UINT32, "prompt_tokens completion_tokens retriever_rank"),
    (WEIRD_BOOL, "correct"),
    (WEIRD_TS, "produced_at"),
    (WEIRD_DURATION, "latency time_to_first_token"),
    (WEIRD_TASK, "task"),
    (WEIRD_FAMILY, "family"),
    (WEIRD_FORM, "form"),
    (WEIRD_MAP, "groups metadata"),
    (WEIRD_LIST, "references order choice_probabilities documents"),
]:
    for _name in _keys.split():
        _camel = _name.split("_")[0] + "".join(p.title() for p in _name.split("_")[1:])
        WEIRD_BY_KEY[_name] = WEIRD_BY_KEY[_camel] = [*_kind, *ODD]


def test_every_weird_value_in_every_place_of_real_lines() -> None:
    """Systematic: each field of lines of each kind in the demo sample, set to each weird value, to null,
    and given under both its names (json_format: the second wins for most fields, an error for optional ones)."""
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        sample = [json.loads(line) for line in fh]
    bases, seen = [], set()
    for line in sample:  # the first line with each set of keys (nested keys too)
        shape = frozenset(k for o in objects(line) for k in o)
        if shape not in seen:
            seen.add(shape)
            bases.append(line)
    cases = 0
    for base in bases:
        text = json.dumps(base)
        for i, target in enumerate(objects(json.loads(text))):
            for key in list(target):
                snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
                for value in [*WEIRD_BY_KEY.get(key, WEIRD_TEXT + ODD), "both"]:
                    line = json.loads(text)
                    where = objects(line)[i]
                    if value == "both":
                        where[snake] = where[key]
                    else:
                        where[key] = value
                    assert_same(dumps(line))
                    cases += 1
    assert len(bases) > 20 and cases > 5000


def test_several_processes_read_a_file_as_one_does(tmp_path, monkeypatch):
    """Same lines, numbers, messages and errors, in order, across chunk boundaries; gzip too."""
    monkeypatch.setattr(jsonl, "CHUNK_LINES", 300)  # nine chunks: more than the reader keeps ahead
    with gzip.open(SAMPLE, "rb") as fh:
        good = fh.read().splitlines(keepends=True)[:2500]
    bad = [b"\n", b"{not json\n", b'{"id": "\xff"}\n', b'{"task": 6, "nope": 1}\n', b"   \r\n", b'{"task": 6}\r\n']
    body = b"".join(good[:1999] + bad + good[1999:]) + b'{"id": "last"}'
    plain = tmp_path / "p.jsonl"
    plain.write_bytes(body)
    packed = tmp_path / "p.jsonl.gz"
    packed.write_bytes(gzip.compress(body))

    def seen(path: Path, processes: int) -> list[tuple[int, bytes | None, str]]:
        return [
            (x.number, x.prediction.SerializeToString(deterministic=True) if x.prediction else None, x.error)
            for x in read_predictions(path, processes=processes)
        ]

    one = seen(plain, 1)
    assert len(one) == 2505 and sum(1 for _, p, _ in one if p is None) == 3
    assert seen(plain, 2) == one
    assert seen(packed, 3) == one
