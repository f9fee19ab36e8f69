"""A JSON line straight to a message's deterministic wire bytes, in C, when the line is plain.

The client's work per line was: JSON to a Python dict, the dict to a protobuf message, the message
to bytes (holistic_client.prediction_json does the first two about 4x faster than json_format, and
still costs ~15 us a line). What the gateway needs is only the bytes, and the batch's grouping
needs only the model. `_jsonline.c` reads the JSON once and writes the wire encoding as it goes.

It answers only for what it recognises exactly, so that its bytes are always
json_format.Parse(line).SerializeToString(deterministic=True): plain JSON values of each field's
own type under either of its names, enum names, `...Z` timestamps and non-negative `...s`
durations (the spellings json_format.MessageToJson writes). Anything else (see the C file's head)
is None, and the caller parses the line in Python, which gives json_format's message or error
(tests/clients/test_json_wire.py holds the two to each other, byte for byte).

Without a C compiler (a slim image built from source) `encoder()` is None and every line takes the
Python path: slower, the same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

try:
    from holistic_client import _jsonline
except ImportError:  # not built: the Python path
    _jsonline = None

# kinds, as _jsonline.c numbers them
UNSUPPORTED, STRING, DOUBLE, BOOL, ENUM, UINT32, MESSAGE, MAP_SS, TIMESTAMP, DURATION = range(10)
_SCALARS = {
    FieldDescriptor.TYPE_STRING: STRING,
    FieldDescriptor.TYPE_DOUBLE: DOUBLE,
    FieldDescriptor.TYPE_BOOL: BOOL,
    FieldDescriptor.TYPE_ENUM: ENUM,
    FieldDescriptor.TYPE_UINT32: UINT32,
}  # others (floats rounded to 32 bits, 64-bit integers written as strings, bytes): Python
_WELL_KNOWN = {"google.protobuf.Timestamp": TIMESTAMP, "google.protobuf.Duration": DURATION}

Encode = Callable[[bytes], "tuple[bytes, str] | None"]


def _kind(field: FieldDescriptor) -> int:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        if sub.GetOptions().map_entry:
            key, value = sub.fields_by_name["key"], sub.fields_by_name["value"]
            return MAP_SS if key.type == value.type == FieldDescriptor.TYPE_STRING else UNSUPPORTED
        if sub.full_name in _WELL_KNOWN:
            return _WELL_KNOWN[sub.full_name]
        return UNSUPPORTED if sub.full_name.startswith("google.protobuf.") else MESSAGE
    kind = _SCALARS.get(field.type, UNSUPPORTED)
    if field.is_repeated and kind != STRING:
        return UNSUPPORTED  # repeated numbers are packed: not written here
    return kind


def spec(descriptor: Descriptor, key_field: str = "", _outer: frozenset[str] = frozenset()) -> tuple[Any, int]:
    """The (fields, key_number) tuple _jsonline.compile takes, from a message descriptor."""
    outer = _outer | {descriptor.full_name}
    fields = []
    for f in sorted(descriptor.fields, key=lambda f: f.number):
        kind, extra = _kind(f), None
        if kind == MESSAGE:
            if f.message_type.full_name in outer:  # a recursive message: Python
                kind = UNSUPPORTED
            else:
                extra = spec(f.message_type, _outer=outer)[0]
        elif kind == ENUM:
            extra = tuple((v.name, v.number) for v in f.enum_type.values)
        repeated = f.is_repeated and kind != MAP_SS
        fields.append((f.number, f.json_name, f.name, kind, repeated, f.has_presence and not repeated, extra))
    key = descriptor.fields_by_name[key_field].number if key_field else 0
    return tuple(fields), key


def encoder(descriptor: Descriptor, key_field: str = "") -> Encode | None:
    """encode(raw) -> (deterministic wire bytes, the key field's value) or None (parse it in Python);
    None itself when the C module is not built."""
    if _jsonline is None:
        return None
    return partial(_jsonline.encode, _jsonline.compile(spec(descriptor, key_field)))
