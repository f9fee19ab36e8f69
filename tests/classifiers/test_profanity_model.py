"""The bundled default model: rebuilt bit for bit, and within 1e-5 of scikit-learn on adversarial text."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest

from holistic.classifiers import convert_profanity
from holistic.classifiers.model_dir import DEFAULT_MODEL_DIR, load_model_dir
from holistic.classifiers.runtime import open_classifier


def adversarial_corpus() -> list[str]:
    """Unicode, emoji, empty and very long strings, and non-ASCII letters glued to vocabulary words."""
    rng = random.Random(7)
    from profanity_check import profanity_check as pc

    vocab = sorted(pc.vectorizer.vocabulary_)
    common = [
        "the",
        "you",
        "are",
        "a",
        "to",
        "and",
        "of",
        "it",
        "is",
        "in",
        "that",
        "this",
        "for",
        "what",
        "help",
        "please",
        "thanks",
    ]
    seps = [" ", "_", "/", "#", "@", "...", "😀", "\t", "\n", "😡", "-", ""]
    glue = ["λ", "ç", "é", "ß", "İ", "Σ", "ж", "連", "ï", "\u0301", "\u200b", "ａ"]
    out = [
        "", " ", "\n\t ", "!!!", "fuck you", "go to hell, you scum", "nigλhts", "adminship😡çbitch",
        "İstanbul idiot", "Βcommand", "ΣΊΣΥΦΟΣ ς σ", "straße STRASSE", "pokémon josé", "ＦＵＣＫ", "ⓕⓤⓒⓚ",
        "𝐟𝐮𝐜𝐤", "shi\u00adt", "f\u200bu\u200bc\u200bk", "NUL\x00shit", "\ufeffbom damn", "nbsp\u00a0ass",
        "ideographic\u3000space crap", "مرحبا", "नमस्ते", "你好 连絡", "a\ud800 lone surrogate bitch",
    ]  # fmt: skip
    for _ in range(250):
        words = [rng.choice(vocab if rng.random() < 0.5 else common) for _ in range(rng.randint(15, 25))]
        out.append("".join(w.upper() if rng.random() < 0.2 else w + rng.choice(seps) for w in words))
    for _ in range(40):
        out.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(250, 350))))
    for _ in range(200):
        w = rng.choice(vocab)
        out.append(f"{rng.choice(common)} {rng.choice(glue)}{w}{rng.choice(glue)} {rng.choice(vocab)}")
    out += ["idiot " * 30_000, "x" * 100_000, " ".join(rng.choice(vocab) for _ in range(20_000))]
    return out


@pytest.fixture(scope="module")
def corpus_and_reference() -> tuple[list[str], np.ndarray]:
    from profanity_check import profanity_check as pc

    corpus = adversarial_corpus()
    return corpus, pc.predict_prob(corpus)


def test_rebuilding_the_bundled_model_reproduces_its_hash(tmp_path):
    bundled = load_model_dir(None)
    rebuilt = convert_profanity.build(tmp_path / "profanity")
    assert rebuilt == bundled.sha256
    assert (tmp_path / "profanity" / "model.onnx").read_bytes() == (DEFAULT_MODEL_DIR / "model.onnx").read_bytes()
    assert (DEFAULT_MODEL_DIR / "LICENSE").read_text().startswith("The model in this directory")


@pytest.mark.parametrize("engine", ["numpy", "onnx"])
def test_worker_paths_match_scikit_learn_within_1e_5(corpus_and_reference, engine):
    corpus, reference = corpus_and_reference
    clf = open_classifier(load_model_dir(None), threads=1, engine=engine)
    probs = clf.predict(corpus).probs[:, 0]
    worst = np.abs(probs - reference)
    assert worst.max() <= 1e-5, (worst.max(), corpus[int(worst.argmax())][:80])
    assert ((probs >= 0.5) == (reference >= 0.5)).all()


def test_skl2onnx_defaults_are_wrong_and_the_fixes_are_pinned():
    from profanity_check import profanity_check as pc

    graph = convert_profanity.convert()
    attrs = {(n.op_type, a.name): onnx.helper.get_attribute_value(a) for n in graph.graph.node for a in n.attribute}
    assert attrs[("StringNormalizer", "locale")] == b"C.UTF-8"
    assert attrs[("Tokenizer", "tokenexp")] == rb"[\p{L}\p{N}_]+"
    # The ASCII-only default regex splits 'adminship😡çbitch' at 'ç' and exposes 'bitch'.
    import onnxruntime as ort

    naive = ort.InferenceSession(convert_profanity.convert(tokenexp=None).SerializeToString())
    text = "adminship😡çbitch"
    (probs,) = naive.run(["probabilities"], {"text": np.array([[text]], dtype=object)})
    assert probs[0, 1] > 0.99 and pc.predict_prob([text])[0] < 0.1


def test_hand_values_intercept_floor_and_profanity():
    clf = open_classifier(load_model_dir(None))
    probs = clf.predict(["", "!!!", "fuck you", "a\ud800 fuck", "thank you for your help"]).probs[:, 0]
    # No vocabulary word: the decision is each SVM's intercept alone; mean of the 5 Platt sigmoids = 0.03638.
    assert probs[0] == pytest.approx(0.036376, abs=1e-6) and probs[1] == probs[0]
    assert probs[2] > 0.99 and probs[3] > 0.99 and probs[4] < 0.2
