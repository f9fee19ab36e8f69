"""Parsing request bytes ourselves, so that a malformed request is INVALID_ARGUMENT naming its field.

grpcio's own deserializer turns protobuf's DecodeError (e.g. invalid UTF-8 in a string field) into
UNKNOWN with a Python exception's name. Here a failed parse walks the wire format to find the first
string field whose bytes are not UTF-8, and names it with its path (`perturbations[1].options`).
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from holistic.errors import FieldViolation, InvalidArgument

M = TypeVar("M", bound=Message)


def parse(cls: type[M], raw: bytes) -> M:
    try:
        return cls.FromString(raw)
    except DecodeError as exc:
        try:
            where = bad_utf8(cls.DESCRIPTOR, raw, "")
        except (IndexError, ValueError):
            where = None
        if where is not None:
            raise InvalidArgument([FieldViolation(where, "is not valid UTF-8")]) from exc
        raise InvalidArgument([FieldViolation("", f"not a valid {cls.DESCRIPTOR.name}: {exc}")]) from exc


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def bad_utf8(descriptor: Descriptor, buf: bytes, prefix: str) -> str | None:
    """The path of the first string field in `buf` that is not UTF-8, or None."""
    seen: dict[int, int] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, i = _varint(buf, i)
            continue
        if wire_type in (1, 5):
            i += 8 if wire_type == 1 else 4
            continue
        if wire_type != 2:
            return None
        n, i = _varint(buf, i)
        chunk, i = buf[i : i + n], i + n
        field = descriptor.fields_by_number.get(number)
        if field is None:
            continue
        index = seen.get(number, 0)
        seen[number] = index + 1
        path = prefix + field.name
        is_map = field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry
        if field.is_repeated and not is_map:
            path += f"[{index}]"
        if field.type == FieldDescriptor.TYPE_STRING:
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError:
                return path
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            inner = bad_utf8(field.message_type, chunk, path + ".")
            if inner is not None:
                return path if is_map else inner
    return None
