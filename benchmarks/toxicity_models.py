"""Classifier speed on the same texts: (a) the default model in the worker vs scikit-learn at batch 256;
(b) an exported bert-base Detoxify-architecture model (random weights, built here) under onnxruntime fp32
and int8 (the worker's path: one predict call over all texts, sorted by length into batches) vs PyTorch on
the same checkpoint: `Detoxify(...).predict` on consecutive batches, and PyTorch at its best (inference_mode,
the same sorted batches), with the agreement of their scores. Threads are set the same for both
(torch.set_num_threads(N), ORT intra_op_num_threads=N), for each N asked; rounds are interleaved and the
ratios are medians of per-round ratios, so the machine's load moves both sides of a ratio together.

    .venv/bin/python -m benchmarks.toxicity_models [--rounds 5] [--skip-bert] [--skip-default]
        [--bert-rounds 3] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from holistic.classifiers.model_dir import load_model_dir
from holistic.classifiers.runtime import open_classifier
from holistic.classifiers.transformer import length_buckets
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


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def torch_sorted(detox, batch_size: int):
    """PyTorch at its best on the same sequence handling as the worker: inference_mode, texts sorted by
    length into runs of batch_size, each padded to its longest (`length_buckets`), order restored."""
    import torch

    def predict(texts: list[str]) -> np.ndarray:
        ids = detox.tokenizer(texts, truncation=True)["input_ids"]
        probs = np.zeros((len(texts), len(detox.class_names)))
        with torch.inference_mode():
            for chunk in length_buckets([len(x) for x in ids], batch_size):
                batch = detox.tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, return_tensors="pt")
                probs[chunk] = torch.sigmoid(detox.model(**batch)[0]).double().numpy()
        return probs

    return predict


def detoxify_batches(detox, batch_size: int):
    """What a user of Detoxify writes: predict on consecutive batches (its own padding to the longest)."""

    def predict(texts: list[str]) -> np.ndarray:
        rows = [np.array(list(detox.predict(texts[i : i + batch_size]).values())).T
                for i in range(0, len(texts), batch_size)]  # fmt: skip
        return np.concatenate(rows)

    return predict


def interleaved(engines: dict, texts: list[str], rounds: int) -> dict[str, list[float]]:
    """texts/s per engine and round; each round runs every engine once on all texts, one after the
    other, so a change in the machine's load falls on all of them alike."""
    rates: dict[str, list[float]] = {name: [] for name in engines}
    for fn in engines.values():
        fn(texts[:8])  # warm-up: first-run allocations and kernel selection
    for _ in range(rounds):
        for name, fn in engines.items():
            t = time.perf_counter()
            fn(texts)
            rates[name].append(len(texts) / (time.perf_counter() - t))
    return rates


def bench_bert(texts: list[str], rounds: int, threads: list[int], batch: int = 32) -> None:
    import torch

    from holistic.classifiers.export_detoxify import export_detoxify
    from tests.classifiers.detoxify_fixtures import BASE, build_bert, detoxify_offline

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
        probe = open_classifier(load_model_dir(root / "fp32"), threads=1, batch_size=batch)
        lengths = [len(x) for x in probe.encode(sample)[0]]
        arrival = [max(lengths[i : i + batch]) for i in range(0, len(lengths), batch)]
        bucketed = [max(lengths[i] for i in b) for b in length_buckets(lengths, batch)]
        print(f"    {len(sample)} demo outputs, mean {np.mean(lengths):.0f} tokens (max {max(lengths)}), "
              f"batch {batch}: padded to {arrival} in arrival order, to {bucketed} sorted by length")  # fmt: skip
        for n in threads:
            torch.set_num_threads(n)
            engines = {
                "Detoxify(...).predict, arrival order": detoxify_batches(detox, batch),
                "PyTorch inference_mode, sorted by length": torch_sorted(detox, batch),
                "onnxruntime fp32 (worker path)": open_classifier(load_model_dir(root / "fp32"), n, batch).predict,
                "onnxruntime int8 (worker path)": open_classifier(load_model_dir(root / "int8"), n, batch).predict,
            }
            if n == threads[0]:
                ref = engines["Detoxify(...).predict, arrival order"](sample)
                for name in list(engines)[1:]:
                    p = engines[name](sample)
                    p = p.probs if hasattr(p, "probs") else p
                    agree = ((p >= 0.5) == (ref >= 0.5)).mean()
                    print(f"    agreement with Detoxify.predict, {name}: max |Δp| {np.abs(p - ref).max():.1e}, "
                          f"mean |Δp| {np.abs(p - ref).mean():.1e}, labels agree at 0.5: {agree:.2%}")  # fmt: skip
            before = load_average()
            rates = interleaved(engines, sample, rounds)
            print(f"  {n} thread(s): torch.set_num_threads({n}), ORT intra_op_num_threads={n} (inter_op 1, "
                  f"no idle spinning); {rounds} interleaved rounds; {before} -> {load_average()}")  # fmt: skip
            best = rates["PyTorch inference_mode, sorted by length"]
            for name, r in rates.items():
                ratios = [a / b for a, b in zip(r, best, strict=True)]
                print(f"    {name:<44} {statistics.median(r):>8,.1f} median texts/s "
                      f"{statistics.median(ratios):>6.2f}x PyTorch sorted (median of per-round ratios)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-bert", action="store_true")
    parser.add_argument("--skip-default", action="store_true")
    parser.add_argument("--bert-rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="(b): thread counts, each for both")
    args = parser.parse_args()
    texts = demo_outputs()
    if not args.skip_default:
        bench_default(texts, args.rounds)
    if not args.skip_bert:
        bench_bert(texts, args.bert_rounds, args.threads)


if __name__ == "__main__":
    main()
