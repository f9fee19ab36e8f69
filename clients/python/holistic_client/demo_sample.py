"""The bundled demo sample, its times made relative to now when it is submitted (the file is dated
2026-11-01; shifted, its newest prediction is a minute old, so `--window 1h`, `24h` and the dashboard's
last day show it)."""

from __future__ import annotations

from pathlib import Path

import holistic
from holistic_client.jsonl import Line, read_predictions

SAMPLE = Path(holistic.__file__).parent / "data" / "demo_predictions.jsonl.gz"


def rebased(path: Path, now_s: float) -> tuple[list[Line], int]:
    """The sample's lines with produced_at shifted so the newest is a minute ago (windows show data)."""
    lines = list(read_predictions(path))
    newest = max(
        (ln.prediction.produced_at.seconds for ln in lines if ln.prediction and ln.prediction.HasField("produced_at")),
        default=int(now_s),
    )
    shift = int(now_s) - 60 - newest
    for ln in lines:
        if ln.prediction is not None and ln.prediction.HasField("produced_at"):
            ln.prediction.produced_at.seconds += shift
    return lines, shift
