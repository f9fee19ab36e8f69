"""`holistic models export-detoxify`: a local Detoxify checkpoint + config/tokenizer dir -> a model directory.

Never touches a model hub: the architecture comes from the checkpoint's own training config
(`arch.args.model_name`), its shape from the local `config.json`, its tokenizer from the local files.
The checkpoint is a full pickle (`torch.load(weights_only=False)`): load only files you trust.
The export is checked before anything is written: our run-time tokenizer must give the same ids as
the transformers tokenizer, and onnxruntime fp32 must match PyTorch within the tolerance (1e-4 in
probability); otherwise nothing is written. Needs the `export` extra (torch, transformers, onnx).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from holistic.classifiers.model_dir import FORMAT, LABELS_FILE, MODEL_FILE, TOKENIZER_FILE, ModelError, load_model_dir

# Detoxify renames these classes in `load_checkpoint`; we do the same so labels match `predict`.
RENAMES = {"toxic": "toxicity", "identity_hate": "identity_attack", "severe_toxic": "severe_toxicity"}
# The unbiased model's logits 7..15 (Jigsaw Unintended Bias identity columns); Detoxify.predict drops them.
UNBIASED_IDENTITIES = [
    "male", "female", "homosexual_gay_or_lesbian", "christian", "jewish", "muslim", "black", "white",
    "psychiatric_or_mental_illness",
]  # fmt: skip
ARCHITECTURES = {  # model class -> (inputs, position offset of the position table)
    "BertForSequenceClassification": (["input_ids", "attention_mask", "token_type_ids"], 0),
    "AlbertForSequenceClassification": (["input_ids", "attention_mask", "token_type_ids"], 0),
    "RobertaForSequenceClassification": (["input_ids", "attention_mask"], 2),
    "XLMRobertaForSequenceClassification": (["input_ids", "attention_mask"], 2),
}
PARITY_TEXTS = [
    "", "you are a wonderful person", "You are an idiot and I hate you!", "Thanks, that fixed it.",
    "İstanbul straße ΣΊΣΥΦΟΣ naïve café 😀 連絡 \u200b\u0301 NUL\x00 tab\tnew\nline",
    "word " * 700,  # longer than any max_length here: truncated
    "the doctor said she would call her mother", "\ud800 lone surrogate", "!!!", "ok",
]  # fmt: skip


@dataclass
class ExportReport:
    out: str
    architecture: str
    labels: list[str]
    identity_labels: list[str]
    max_length: int
    fp32_max_abs_prob: float
    fp32_max_abs_logit: float
    tokenizer_mismatches: int
    int8_max_abs_prob: float | None = None
    optimized: bool = False
    sha256: str = ""
    sizes: dict[str, int] = field(default_factory=dict)


def label_names(train_config: dict[str, Any], num_classes: int) -> tuple[list[str], list[str]]:
    """Class names as Detoxify.predict names them, then identity labels (logits past the classes)."""
    args = train_config.get("dataset", {}).get("args", {})
    classes = [RENAMES.get(c, c) for c in args.get("classes", [])]
    if not classes:
        raise ModelError("the checkpoint's config has no dataset.args.classes")
    if num_classes < len(classes):
        raise ModelError(f"num_classes {num_classes} < {len(classes)} class names")
    extra = num_classes - len(classes)
    identities = list(args.get("identity_classes") or [])
    if extra and len(identities) != extra:
        identities = (
            UNBIASED_IDENTITIES
            if extra == len(UNBIASED_IDENTITIES)
            else [f"logit_{i}" for i in range(len(classes), num_classes)]
        )
    identities = identities[:extra]
    return classes + identities, [x for x in identities if not x.startswith("logit_")]


def export_detoxify(
    checkpoint: Path,
    config_dir: Path,
    out: Path,
    *,
    int8: bool = False,
    optimize: bool = True,
    tolerance: float = 1e-4,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> ExportReport:
    import torch
    import transformers

    if out.exists() and any(out.iterdir()) and not force:
        raise ModelError(f"{out} exists and is not empty (use --force to replace it)")
    loaded = torch.load(checkpoint, map_location="cpu", weights_only=False)
    if not isinstance(loaded, dict) or "config" not in loaded or "state_dict" not in loaded:
        raise ModelError(f"{checkpoint} is not a Detoxify checkpoint (needs 'config' and 'state_dict')")
    arch = loaded["config"]["arch"]["args"]
    model_name, num_classes = arch["model_name"], int(arch["num_classes"])
    if model_name not in ARCHITECTURES:
        raise ModelError(f"architecture {model_name} is not supported (supported: {sorted(ARCHITECTURES)})")
    inputs, pos_offset = ARCHITECTURES[model_name]
    labels, identities = label_names(loaded["config"], num_classes)

    model_cls = getattr(transformers, model_name)
    config = model_cls.config_class.from_pretrained(str(config_dir), num_labels=num_classes, local_files_only=True)
    config._attn_implementation = "eager"  # the ORT optimizer fuses only the eager attention export
    model = model_cls(config)
    missing, unexpected = model.load_state_dict(loaded["state_dict"], strict=False)
    bad = [k for k in [*missing, *unexpected] if not k.endswith("position_ids")]
    if bad:
        raise ModelError(f"the state_dict does not fit {model_name} with {config_dir}/config.json: {bad[:5]}")
    model.eval()

    hf_tok = transformers.AutoTokenizer.from_pretrained(str(config_dir), local_files_only=True, use_fast=True)
    limit = config.max_position_embeddings - pos_offset
    max_length = min(int(hf_tok.model_max_length), limit) if hf_tok.model_max_length < 1e9 else limit
    pad_id = hf_tok.pad_token_id if hf_tok.pad_token_id is not None else 0

    with tempfile.TemporaryDirectory(prefix=".export-", dir=out.parent if out.parent.exists() else None) as tmp_s:
        tmp = Path(tmp_s)
        backend = hf_tok.backend_tokenizer
        backend.no_padding()
        backend.no_truncation()
        backend.save(str(tmp / TOKENIZER_FILE))
        raw, fused = tmp / "raw.onnx", tmp / "fused.onnx"
        _export_onnx(model, inputs, raw, config.vocab_size)
        candidates = [raw]
        if optimize and model_name != "AlbertForSequenceClassification" and _optimize(raw, fused, config):
            candidates.insert(0, fused)
        spec: dict[str, Any] = {
            "format": FORMAT, "name": f"detoxify-{Path(checkpoint).stem}", "kind": "transformer",
            "labels": labels, "primary": labels[0], "identity_labels": identities, "apply": "sigmoid",
            "output": "logits", "max_length": max_length, "inputs": inputs, "pad_id": int(pad_id),
            "detects": "Detoxify classes: " + ", ".join(labels),
            "source": {"checkpoint": Path(checkpoint).name, "architecture": model_name},
        }  # fmt: skip
        _write_labels(tmp, spec)
        for fp32 in candidates:  # the fused graph first; the plain export if fusion costs parity
            shutil.copyfile(fp32, tmp / MODEL_FILE)
            report = _parity(model, hf_tok, tmp, max_length, inputs)
            optimized = fp32 == fused
            log(
                f"fp32 parity with PyTorch ({'fused' if optimized else 'plain'} graph): max |Δp| = "
                f"{report['fp32_max_abs_prob']:.2e}, max |Δlogit| = {report['fp32_max_abs_logit']:.2e}; "
                f"tokenizer mismatches: {report['tokenizer_mismatches']}"
            )
            if report["fp32_max_abs_prob"] <= tolerance:
                break
        report.update(out=str(out), architecture=model_name, labels=labels, identity_labels=identities)
        if report["tokenizer_mismatches"]:
            raise ModelError("the run-time tokenizer (tokenizer.json) disagrees with transformers; nothing written")
        if not report["fp32_max_abs_prob"] <= tolerance:
            raise ModelError(
                f"fp32 parity {report['fp32_max_abs_prob']:.2e} is worse than {tolerance:g}; nothing written"
            )
        if int8:
            _quantize(fp32, tmp / MODEL_FILE)
            spec["quantization"] = "int8-dynamic"
            _write_labels(tmp, spec)
            drift = _parity(model, hf_tok, tmp, max_length, inputs)
            report["int8_max_abs_prob"] = drift["fp32_max_abs_prob"]
            log(f"int8 drift from PyTorch: max |Δp| = {report['int8_max_abs_prob']:.2e}")
        spec["parity"] = {
            k: report[k] for k in ("fp32_max_abs_prob", "fp32_max_abs_logit", "int8_max_abs_prob") if k in report
        }
        _write_labels(tmp, spec)
        for path in (raw, fused):
            path.unlink(missing_ok=True)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(tmp, out)
    written = load_model_dir(out)
    return ExportReport(
        **{k: v for k, v in report.items() if k in ExportReport.__dataclass_fields__},
        max_length=max_length, optimized=optimized, sha256=written.sha256,
        sizes={p.name: p.stat().st_size for p in out.iterdir()},
    )  # fmt: skip


def _write_labels(directory: Path, spec: dict[str, Any]) -> None:
    (directory / LABELS_FILE).write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _export_onnx(model: Any, inputs: list[str], path: Path, vocab_size: int) -> None:
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(inputs, args, strict=True))).logits

    # A padded example: with an all-ones mask transformers drops the mask while tracing, and the graph
    # would then ignore padding (wrong scores for every padded batch).
    ids = torch.randint(5, vocab_size, (2, 8))
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 5:] = 0
    example = tuple({"input_ids": ids, "attention_mask": mask}.get(n, torch.zeros_like(ids)) for n in inputs)
    axes = {n: {0: "batch", 1: "sequence"} for n in inputs} | {"logits": {0: "batch"}}
    # The tracer warns about Python branches on shapes; parity on padded batches is what we check instead.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Logits(model).eval(), example, str(path), input_names=inputs, output_names=["logits"],
            dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip


def _optimize(src: Path, dst: Path, config: Any) -> bool:
    """ORT's transformer fusions (attention, layer norm, GELU): faster on CPU; parity is checked after."""
    from onnxruntime.transformers.optimizer import optimize_model

    try:
        opt = optimize_model(str(src), model_type="bert", num_heads=config.num_attention_heads,
                             hidden_size=config.hidden_size)  # fmt: skip
        opt.save_model_to_file(str(dst))
    except Exception:  # an architecture the optimizer does not know: keep the plain export
        return False
    return True


def _quantize(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip


def _parity(model: Any, hf_tok: Any, directory: Path, max_length: int, inputs: list[str]) -> dict[str, Any]:
    """Max |Δ| between PyTorch and the directory's ONNX model on padded batches of PARITY_TEXTS."""
    import torch

    from holistic.classifiers.runtime import open_classifier
    from holistic.classifiers.text import sanitize_all
    from holistic.classifiers.transformer import TransformerClassifier

    clf = open_classifier(load_model_dir(directory), threads=1, batch_size=4)
    assert isinstance(clf, TransformerClassifier)
    ids, _ = clf.encode(PARITY_TEXTS)

    hf_ids = hf_tok(sanitize_all(PARITY_TEXTS), truncation=True, max_length=max_length)["input_ids"]
    mismatches = sum(1 for a, b in zip(ids, hf_ids, strict=True) if list(a) != list(b))
    worst_p = worst_logit = 0.0
    for start in range(0, len(ids), 4):
        chunk = ids[start : start + 4]
        ort_logits = clf.run_logits(chunk)
        ort_p = 1.0 / (1.0 + np.exp(-ort_logits))
        width = max(len(x) for x in chunk)
        input_ids = torch.full((len(chunk), width), clf.model.spec.pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, row in enumerate(chunk):
            input_ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = torch.zeros_like(input_ids)
        with torch.no_grad():
            logits = model(**feed).logits.double().numpy()
        torch_p = 1.0 / (1.0 + np.exp(-logits))
        worst_p = max(worst_p, float(np.max(np.abs(ort_p - torch_p))))
        worst_logit = max(worst_logit, float(np.max(np.abs(ort_logits - logits))))
    return {"fp32_max_abs_prob": worst_p, "fp32_max_abs_logit": worst_logit, "tokenizer_mismatches": mismatches}


def report_dict(report: ExportReport) -> dict[str, Any]:
    return asdict(report)
