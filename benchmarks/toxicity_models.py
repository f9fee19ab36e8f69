"""Classifier speed on the same texts: (a) the default model in the worker vs scikit-learn at batch 256;
(b) an exported bert-base Detoxify-architecture model (random weights, built here) under onnxruntime fp32
and int8 vs `Detoxify(...).predict` in PyTorch on the same checkpoint, with the agreement of their scores.

    .venv/bin/python -m benchmarks.toxicity_models [--rounds 5] [--skip-bert]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from holistic.classifiers.model_dir import load_model_dir
from holistic.classifiers.runtime import open_classifier
from holistic_app.demo import SAMPLE


def demo_outputs() -> list[str]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        return [t for line in fh if (t := json.loads(line).get("output", "")).strip()]


def rate(fn, texts: list[str], batch: int, rounds: int) -> tuple[float, float]:
    """Best and median texts/s over rounds, each a pass over texts in batches."""
    rates = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(0, len(texts), batch):
            fn(texts[i : i + batch])
        rates.append(len(texts) / (time.perf_counter() - t))
    return max(rates), statistics.median(rates)


def show(name: str, r: tuple[float, float], base: tuple[float, float] | None = None) -> None:
    ratio = f"  {r[1] / base[1]:.2f}x (median)" if base else ""
    print(f"  {name:<44} {r[0]:>10,.0f} best {r[1]:>10,.0f} median texts/s{ratio}")


def bench_default(texts: list[str], rounds: int) -> None:
    from profanity_check import profanity_check as pc

    model = load_model_dir(None)
    worker = open_classifier(model)  # what the toxicity worker runs (numpy over the ONNX weights)
    ort_graph = open_classifier(model, threads=1, engine="onnx")
    sample = texts[:2560]
    ref = pc.predict_prob(sample)
    print(
        f"(a) default model, {len(sample)} demo outputs (mean {np.mean([len(t) for t in sample]):.0f} chars), batch 256"
    )
    print(f"    max |Δp| vs sklearn: worker {np.abs(worker.predict(sample).probs[:, 0] - ref).max():.1e}, "
          f"ORT graph {np.abs(ort_graph.predict(sample).probs[:, 0] - ref).max():.1e}")  # fmt: skip
    sk = rate(pc.predict_prob, sample, 256, rounds)
    show("sklearn predict_proba (alt-profanity-check)", sk)
    show("worker: numpy over the ONNX model's weights", rate(worker.predict, sample, 256, rounds), sk)
    show("onnxruntime graph (string kernels), 1 thread", rate(ort_graph.predict, sample, 256, rounds), sk)


def bench_bert(texts: list[str], rounds: int) -> None:
    import torch

    from holistic.classifiers.export_detoxify import export_detoxify
    from tests.classifiers.detoxify_fixtures import BASE, build_bert, detoxify_offline

    torch.set_num_threads(2)
    sample = texts[:128]
    with tempfile.TemporaryDirectory(prefix="holistic-bert-") as d:
        root = Path(d)
        t = time.perf_counter()
        ckpt = build_bert(root / "ckpt", size=BASE, vocab_size=30522, max_length=512, embedding_rows=30522, init=0.02)
        print(f"(b) bert-base Detoxify `original` architecture, random weights: checkpoint "
              f"{ckpt.stat().st_size / 2**20:.0f} MiB built in {time.perf_counter() - t:.1f} s")  # fmt: skip
        fp32 = export_detoxify(ckpt, ckpt.parent, root / "fp32", log=lambda s: None)
        int8 = export_detoxify(ckpt, ckpt.parent, root / "int8", int8=True, log=lambda s: None)
        sizes = f"{fp32.sizes['model.onnx'] / 2**20:.0f} / {int8.sizes['model.onnx'] / 2**20:.0f} MiB"
        print(f"    export parity: fp32 max |Δp| {fp32.fp32_max_abs_prob:.1e}; "
              f"int8 drift {int8.int8_max_abs_prob:.1e}; sizes {sizes}")  # fmt: skip
        detox = detoxify_offline(ckpt, ckpt.parent)
        ort32 = open_classifier(load_model_dir(root / "fp32"), threads=2, batch_size=32)
        ort8 = open_classifier(load_model_dir(root / "int8"), threads=2, batch_size=32)
        tokens = np.mean([len(x) for x in ort32.encode(sample)[0]])
        print(f"    {len(sample)} demo outputs, mean {tokens:.0f} tokens, batch 32, 2 threads each")
        ref = np.array(list(detox.predict(sample).values())).T
        for name, clf in (("fp32", ort32), ("int8", ort8)):
            p = clf.predict(sample).probs
            agree = ((p >= 0.5) == (ref >= 0.5)).mean()
            print(f"    agreement with PyTorch, {name}: max |Δp| {np.abs(p - ref).max():.1e}, "
                  f"mean |Δp| {np.abs(p - ref).mean():.1e}, labels agree at 0.5: {agree:.2%}")  # fmt: skip
        pt = rate(detox.predict, sample, 32, rounds)
        show("Detoxify(...).predict, PyTorch fp32", pt)
        show("onnxruntime fp32 (worker path)", rate(ort32.predict, sample, 32, rounds), pt)
        show("onnxruntime int8 (worker path)", rate(ort8.predict, sample, 32, rounds), pt)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-bert", action="store_true")
    args = parser.parse_args()
    texts = demo_outputs()
    bench_default(texts, args.rounds)
    if not args.skip_bert:
        bench_bert(texts, max(3, args.rounds // 2 + 1))


if __name__ == "__main__":
    main()
