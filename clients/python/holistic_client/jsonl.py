"""Prediction files: JSON Lines, one holistic.v1.Prediction per line in canonical protobuf JSON.

A line becomes its prediction's deterministic wire bytes and its model, which is all that sending
needs: in C straight from the JSON (holistic_client.json_wire, ~10x faster than Python) where the
line is plain, else through holistic_client.prediction_json (the answers of json_format.Parse,
about 4x faster than it), and a large file in several processes. The message itself is decoded
from the bytes only when asked for (Line.prediction).
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import islice
from pathlib import Path
from typing import IO

from google.protobuf import json_format

from holistic.v1.prediction_pb2 import Prediction
from holistic_client.json_wire import encoder
from holistic_client.prediction_json import JsonParser

_JSON_POSITION = re.compile(r"^Failed to load JSON: (.*): line \d+ column (\d+) \(char \d+\)\.?$", re.S)


def _parse_error(exc: json_format.ParseError) -> str:
    """`not valid JSON at column 44: Expecting ',' delimiter`: a file's line is one JSON line."""
    m = _JSON_POSITION.match(str(exc))
    return f"not valid JSON at column {m.group(2)}: {m.group(1)}" if m else str(exc)


_PARSER = JsonParser(Prediction)
_ENCODE = encoder(Prediction.DESCRIPTOR, "model")  # None where the C module is not built


class Line:
    """One line of a file: its 1-based number and either its prediction, as `data` (the deterministic
    wire encoding, what the client sends) and `model`, or the `error` that refused it."""

    __slots__ = ("_data", "_model", "_prediction", "error", "number")

    def __init__(self, number: int, data: bytes | None = None, model: str = "", error: str = "") -> None:
        self.number, self._data, self._model, self.error = number, data, model, error
        self._prediction: Prediction | None = None

    @classmethod
    def of(cls, number: int, prediction: Prediction) -> Line:
        line = cls(number)
        line._prediction = prediction
        return line

    @property
    def prediction(self) -> Prediction | None:
        """The message, decoded from the line's bytes on first use. The caller may change it (the demo
        moves produced_at): from then on `data` and `model` are the message's."""
        if self._prediction is None and self._data is not None:
            self._prediction = Prediction.FromString(self._data)
        return self._prediction

    @property
    def data(self) -> bytes | None:
        """The deterministic encoding: the line's own bytes until its message was asked for, then the
        message's (serialized again: it may have been changed)."""
        if self._prediction is not None:
            return self._prediction.SerializeToString(deterministic=True)
        return self._data

    @property
    def model(self) -> str:
        return self._prediction.model if self._prediction is not None else self._model

    def __repr__(self) -> str:
        return f"Line({self.number}, model={self.model!r}, {len(self.data or b'')} bytes, error={self.error!r})"


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _parse_line(number: int, raw: bytes) -> Line:
    got = None if _ENCODE is None else _ENCODE(raw)
    if got is not None:
        return Line(number, got[0], got[1])
    try:  # not plain (or not built): json_format's answer, or its error
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Line(number, None, "", f"not valid UTF-8 at byte {exc.start}")
    try:
        return Line.of(number, _PARSER.parse(text.rstrip("\r\n")))
    except json_format.ParseError as exc:
        return Line(number, None, "", _parse_error(exc))


Parsed = list[tuple[int, bytes | None, str, str]]


def _parse_chunk(chunk: list[tuple[int, bytes]]) -> Parsed:
    """In a worker process: each line as (number, data, model, error), plain values that pickle cheaply."""
    out: Parsed = []
    for number, raw in chunk:
        line = _parse_line(number, raw)
        out.append((number, line.data, line.model, line.error))
    return out


def _lines(parsed: Parsed) -> Iterator[Line]:
    for number, data, model, error in parsed:
        yield Line(number, data, model, error)


def _numbered(path: Path) -> Iterator[tuple[int, bytes]]:
    with _open(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.isspace():  # blank lines are skipped (isspace: no copy, as strip() makes)
                yield number, raw


CHUNK_LINES = 2_000
AUTO_PROCESSES_MIN_BYTES = 128 << 20
AUTO_PROCESSES_MIN_CORES = 4


def parse_processes(path: str | Path) -> int:
    """How many processes `holistic submit` parses a file in by default: one core parses ~60,000 lines/s;
    a file of 128 MiB or more on a machine of 4 or more cores is split over up to 4 spare cores (one
    stays for sending). Each process takes about a second to start, and on the 2-core development
    machine, shared, two processes were slower than one, so there it stays one."""
    cores = os.cpu_count() or 1
    if cores < AUTO_PROCESSES_MIN_CORES or Path(path).stat().st_size < AUTO_PROCESSES_MIN_BYTES:
        return 1
    return min(cores - 1, 4)


def read_predictions(path: str | Path, processes: int = 1) -> Iterator[Line]:
    """Every non-blank line with its 1-based number, in order; a line that does not parse carries an error.

    processes > 1 parses chunks of lines in that many worker processes (spawned: the caller may
    hold gRPC channels, which do not survive fork), keeping a few chunks ahead of the reader.
    """
    lines = _numbered(Path(path))
    if processes <= 1:
        for number, raw in lines:
            yield _parse_line(number, raw)
        return
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        ahead: deque[Future[Parsed]] = deque()
        chunks = iter(lambda: list(islice(lines, CHUNK_LINES)), [])
        for chunk in chunks:
            ahead.append(pool.submit(_parse_chunk, chunk))
            if len(ahead) >= 2 * processes:
                yield from _lines(ahead.popleft().result())
        while ahead:
            yield from _lines(ahead.popleft().result())


def write_predictions(path: str | Path, predictions: Iterable[Prediction]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for p in predictions:
            fh.write(json_format.MessageToJson(p, indent=None) + "\n")
            n += 1
    return n
