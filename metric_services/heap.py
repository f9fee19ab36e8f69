"""The garbage collector told what is permanent, so its full collections stop re-scanning it.

A worker imports numpy, onnxruntime, nltk and the protobuf modules (hundreds of thousands of objects
that live as long as the process) and then fills its caches; CPython's full collection walks every
tracked object each time, and on the worst-case families it cost 4 to 8 µs a prediction
(benchmarks: 20-30 % of their CPU). `gc.freeze()` moves what exists into a permanent generation that
collections skip; objects still die by reference count as before, only cycles among frozen objects
are never reclaimed, so the heap is collected first.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect, then freeze what is left: call once start-up (and its lazy first use) is over."""
    gc.collect()
    gc.freeze()
