"""Parsing one JSON line into a protobuf message about 3x faster than json_format.Parse, same answers.

json_format.Parse walks the JSON in Python, field by field, through descriptor lookups and a
datetime.strptime per Timestamp: about 21,000 lines/s on one core. Here a table built once from
the message's descriptor maps each JSON key (lowerCamel or original name) to a converter, the
converted dict goes to the message's constructor in one call, and Timestamps and Durations in
their canonical forms are computed by arithmetic.

Only what is recognised exactly takes this path: plain JSON values of the field's own type,
enum names, `...Z` timestamps and non-negative `...s` durations. Anything else (an enum given as
a number, a number given as a string, NaN, null, a timestamp with an offset, an unknown field,
a field given under both its names, a duplicate key, a surrogate) raises _Unsure inside, and the
line is parsed again by json_format.Parse, which accepts it or raises its own ParseError. So the
message, and the error, are those of json_format.Parse (tests/clients/test_prediction_json.py).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
Converter = Callable[[Any], Any]


class _Unsure(Exception):
    """Not recognised exactly: json_format.Parse decides."""


class _Duplicate:
    """What the pairs hook returns for a JSON object with a repeated key (json_format refuses those)."""


_DUPLICATE = _Duplicate()


def _pairs(pairs: list[tuple[str, Any]]) -> Any:
    d = dict(pairs)
    return d if len(d) == len(pairs) else _DUPLICATE


_decode = json.JSONDecoder(object_pairs_hook=_pairs).decode

_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.([0-9]{1,9}))?Z")
_DURATION = re.compile(r"([0-9]{1,12})(\.[0-9]{1,9})?s")
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_MAX_DURATION_S = 315_576_000_000
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31),
    FieldDescriptor.TYPE_UINT32: (0, 2**32),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63),
    FieldDescriptor.TYPE_UINT64: (0, 2**64),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64),
}


_CACHE_SIZE = 4096  # distinct dates and durations remembered; a file repeats them (latencies in ms)
_days: dict[str, int] = {}
_durations: dict[str, dict[str, int]] = {}


def _timestamp(value: Any) -> dict[str, int]:
    """Timestamp.FromJsonString's answer for `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, without strptime."""
    m = _TIMESTAMP.fullmatch(value) if type(value) is str else None
    if m is None:
        raise _Unsure
    hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
    if hour > 23 or minute > 59 or second > 59:
        raise _Unsure
    date = value[:10]
    days = _days.get(date)
    if days is None:
        try:
            days = datetime.date(int(value[:4]), int(value[5:7]), int(value[8:10])).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            raise _Unsure from None
        if len(_days) >= _CACHE_SIZE:
            _days.clear()
        _days[date] = days
    frac = m.group(1)
    nanos = round(float("0." + frac) * 1e9) if frac else 0  # as Timestamp.FromJsonString rounds
    if not 0 <= nanos < 1_000_000_000:
        raise _Unsure
    return {"seconds": days * 86_400 + hour * 3_600 + minute * 60 + second, "nanos": nanos}


def _duration(value: Any) -> dict[str, int]:
    """Duration.FromJsonString's answer for a non-negative `S[.f{1,9}]s`."""
    known = _durations.get(value) if type(value) is str else None
    if known is not None:
        return known
    m = _DURATION.fullmatch(value) if type(value) is str else None
    if m is None:
        raise _Unsure
    seconds, frac = int(m.group(1)), m.group(2)
    nanos = round(float("0" + frac) * 1e9) if frac else 0  # as Duration.FromJsonString rounds
    if seconds > _MAX_DURATION_S or not 0 <= nanos < 1_000_000_000:
        raise _Unsure
    if len(_durations) >= _CACHE_SIZE:
        _durations.clear()
    known = _durations[value] = {"seconds": seconds, "nanos": nanos}
    return known


def _string(value: Any) -> str:
    if type(value) is not str:
        raise _Unsure
    return value  # a surrogate makes the constructor raise, and json_format decides


def _double(value: Any) -> float:
    t = type(value)
    if t is float:
        if value - value != 0.0:  # NaN or infinite: json_format has its own words for these
            raise _Unsure
        return value
    if t is int:
        return float(value)  # as json_format does; too large raises OverflowError, and json_format decides
    raise _Unsure


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise _Unsure
    return value


def _integer(lo: int, hi: int) -> Converter:
    def convert(value: Any) -> int:
        if type(value) is not int or not lo <= value < hi:
            raise _Unsure
        return value

    return convert


def _enum(field: FieldDescriptor) -> Converter:
    numbers = {v.name: v.number for v in field.enum_type.values}

    def convert(value: Any) -> int:
        number = numbers.get(value) if type(value) is str else None
        if number is None:
            raise _Unsure
        return number

    return convert


def _repeated(item: Converter) -> Converter:
    def convert(value: Any) -> list[Any]:
        if type(value) is not list:
            raise _Unsure
        return [item(v) for v in value]

    return convert


def _string_list(value: Any) -> list[str]:
    if type(value) is not list:
        raise _Unsure
    for v in value:
        if type(v) is not str:
            raise _Unsure
    return value


def _string_map(value: Any) -> dict[str, str]:
    if type(value) is not dict:
        raise _Unsure
    for v in value.values():
        if type(v) is not str:
            raise _Unsure
    return value


def _scalar(field: FieldDescriptor) -> Converter | None:
    t = field.type
    if t == FieldDescriptor.TYPE_STRING:
        return _string
    if t == FieldDescriptor.TYPE_DOUBLE:
        return _double
    if t == FieldDescriptor.TYPE_BOOL:
        return _bool
    if t == FieldDescriptor.TYPE_ENUM:
        return _enum(field)
    if t in _INT_RANGES:
        return _integer(*_INT_RANGES[t])
    return None  # float (rounded to 32 bits by json_format's own rules) and bytes: json_format decides


_WELL_KNOWN: dict[str, Converter] = {"google.protobuf.Timestamp": _timestamp, "google.protobuf.Duration": _duration}


def _field(field: FieldDescriptor) -> Converter | None:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        if sub.GetOptions().map_entry:
            key, value = sub.fields_by_name["key"], sub.fields_by_name["value"]
            ok = key.type == value.type == FieldDescriptor.TYPE_STRING
            return _string_map if ok else None
        one = _WELL_KNOWN.get(sub.full_name) or (
            None if sub.full_name.startswith("google.protobuf.") else _message(sub)
        )
    else:
        one = _scalar(field)
    if one is None or not field.is_repeated:
        return one
    return _string_list if one is _string else _repeated(one)


_MESSAGES: dict[str, Converter] = {}


def _message(descriptor: Descriptor) -> Converter:
    """A converter from a JSON object to the keyword arguments of descriptor's message constructor."""
    if descriptor.full_name in _MESSAGES:  # built once, and a recursive message refers to itself
        return _MESSAGES[descriptor.full_name]
    table: dict[str, tuple[str, Converter]] = {}

    def convert(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _Unsure
        kwargs: dict[str, Any] = {}
        for key, v in value.items():
            entry = table.get(key)
            if entry is None:
                raise _Unsure
            name, conv = entry
            if name in kwargs:  # the same field under both its names
                raise _Unsure
            kwargs[name] = conv(v)
        return kwargs

    _MESSAGES[descriptor.full_name] = convert
    for f in descriptor.fields:
        conv = _field(f)
        if conv is not None:
            table[f.json_name] = table[f.name] = (f.name, conv)
    return convert


class JsonParser:
    """parse(text) == json_format.Parse(text, cls()): the same message, or the same ParseError."""

    def __init__(self, cls: type[M]) -> None:
        self.cls = cls
        self._kwargs = _message(cls.DESCRIPTOR)

    def parse(self, text: str) -> Any:
        try:
            return self.cls(**self._kwargs(_decode(text)))
        except Exception:  # _Unsure, a JSON error, a value the constructor refuses: json_format decides
            return json_format.Parse(text, self.cls())
