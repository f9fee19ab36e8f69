"""The workers' command packer: the bytes redis-py's own packer sends, for every argument type."""

from __future__ import annotations

import enum
import math
import os

import hiredis
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from holistic.redis import connection as redis_conn
from holistic.redis.connection import PACKER, HiredisPacker, sync_client
from holistic.settings import Settings

if redis_conn._resp_pack is None and os.environ.get("CI"):  # ./dev and any pip install build it; CI must test it
    pytest.fail("holistic/redis/_resp.c is not built (tools/build_native.py)", pytrace=False)

ENCODER = redis.connection.Encoder("utf-8", "strict", False)
REDIS_PY = redis.connection.PythonRespSerializer(6000, ENCODER.encode)


def redis_py(*args: object) -> bytes:
    return b"".join(bytes(chunk) for chunk in REDIS_PY.pack(*args))


def packed(*args: object) -> bytes:
    return b"".join(bytes(chunk) for chunk in PACKER.pack(*args))


ARGS = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.1, -0.0, 1e300, 5e-324, 1.0000000000000002, 2.0**53, 1e16, 1e-5, 123456789.125]),
)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(["EVALSHA", b"HMGET", "hset"]), st.lists(ARGS, max_size=40))
def test_same_bytes_as_redis_py(name: str | bytes, args: list[object]) -> None:
    assert packed(name, *args) == redis_py(name, *args)


def test_floats_as_repr() -> None:
    for value in (0.1, 1 / 3, -2.5e-308, math.inf, -math.inf, 1e22, 123.0):
        assert packed("SET", "k", value) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n" % (
            len(repr(value)),
            repr(value).encode(),
        )


def test_what_hiredis_does_not_take_goes_to_redis_py() -> None:
    for args in (
        ("CLIENT SETNAME", "x"),  # a name with a space: redis-py splits it
        (b"CONFIG GET", b"maxmemory"),
        ("SET", "k", bytearray(b"ab\x00")),
        ("SET", "k", memoryview(b"cd")),
        ("SET", "k", "\u00e9\U0001f600"),
    ):
        assert packed(*args) == redis_py(*args), args
    assert PACKER.pack("CLIENT SETNAME", "x") == [b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$1\r\nx\r\n"]


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}, "\ud800"])
def test_refused_as_redis_py_refuses(bad: object) -> None:
    with pytest.raises(Exception) as ours:
        PACKER.pack("SET", "k", bad)
    with pytest.raises(Exception) as theirs:
        REDIS_PY.pack("SET", "k", bad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_sync_client_packs_with_it_and_round_trips(redis_url: str) -> None:
    client = sync_client(Settings(redis_url=redis_url))
    assert isinstance(client.connection_pool.connection_kwargs["command_packer"], HiredisPacker)
    args = ["é", b"\xff\x00", 7, -(2**62), 0.1, 1e300, "x" * 10_000] * 500
    echoed = client.eval("return ARGV", 0, *args)
    assert echoed == [ENCODER.encode(a) for a in args]
    assert echoed[:5] == ["é".encode(), b"\xff\x00", b"7", str(-(2**62)).encode(), b"0.1"]
    client.close()


def _c_pack():
    if redis_conn._resp_pack is None:
        pytest.fail("holistic/redis/_resp.c is not built: run tools/build_native.py", pytrace=False)
    return redis_conn._resp_pack


EXACT = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(EXACT, max_size=60))
def test_c_packer_sends_hiredis_bytes(args: list[object]) -> None:
    """holistic/redis/_resp.c: the bytes hiredis packs for exact str, bytes, int (64 bits) and float."""
    assert _c_pack()(("EVALSHA", *args)) == hiredis.pack_command(("EVALSHA", *args))


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def test_c_packer_declines_what_it_does_not_pack_and_refuses_lone_surrogates() -> None:
    pack = _c_pack()
    assert pack(()) == b"*0\r\n"
    assert pack(("SET", "k", -(2**63), 2**63 - 1)) == hiredis.pack_command(("SET", "k", -(2**63), 2**63 - 1))
    for other in (2**63, -(2**63) - 1, True, None, Colour.RED, Name("n"), bytearray(b"x"), memoryview(b"y")):
        assert pack(("SET", "k", other)) is None, other  # hiredis or redis-py pack it, or refuse it
    assert pack(tuple(["x"] * 12_345)) == b"*12345\r\n" + b"$1\r\nx\r\n" * 12_345
    with pytest.raises(UnicodeEncodeError):
        pack(("SET", "k", "\ud800"))
    with pytest.raises(TypeError):
        pack(["SET"])  # type: ignore[arg-type]


def test_packer_uses_the_c_packer_and_packs_the_same_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []
    pack = _c_pack()

    def counted(args: tuple[object, ...]) -> bytes | None:
        calls.append(args)
        return pack(args)

    args = ("HSET", "h", "é", b"\xff", 7, 0.1, 2**70, "x" * 3000)
    monkeypatch.setattr(redis_conn, "_resp_pack", counted)
    assert packed(*args) == redis_py(*args) and calls == [args]  # 2**70: declined, then hiredis packs it
    monkeypatch.setattr(redis_conn, "_resp_pack", None)  # not built: hiredis packs every command
    assert packed(*args) == redis_py(*args)
