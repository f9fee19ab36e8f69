"""export-detoxify on tiny random BERT (original) and RoBERTa (unbiased) checkpoints built offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from holistic.classifiers.export_detoxify import export_detoxify
from holistic.classifiers.model_dir import ModelError, load_model_dir
from holistic.classifiers.runtime import open_classifier
from holistic_app.cli import main
from tests.classifiers.detoxify_fixtures import UNBIASED_IDENTITIES, detoxify_offline

TEXTS = ["you are an idiot", "", "the doctor said she would call her mother", "🙂 naïve café", "word " * 300]


def detoxify_scores(checkpoint, texts):
    """Detoxify(...).predict in PyTorch, one column per class it returns (identity logits dropped)."""
    result = detoxify_offline(checkpoint, checkpoint.parent).predict(texts)
    return list(result), np.array([result[k] for k in result]).T


def test_bert_original_export_matches_detoxify_predict(tiny_bert, tmp_path):
    out = tmp_path / "bert"
    report = export_detoxify(tiny_bert, tiny_bert.parent, out, log=lambda s: None)
    assert report.fp32_max_abs_prob <= 1e-4 and report.tokenizer_mismatches == 0
    model = load_model_dir(out)
    assert model.spec.inputs == ["input_ids", "attention_mask", "token_type_ids"]
    assert model.spec.identity_labels == [] and report.sha256 == model.sha256
    names, ref = detoxify_scores(tiny_bert, TEXTS)
    assert (
        names == model.spec.labels == ["toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"]
    )
    scores = open_classifier(model, threads=1, batch_size=2).predict(TEXTS)
    assert np.abs(scores.probs - ref).max() <= 1e-5
    assert scores.truncated.tolist() == [False, False, False, False, True]  # 300 words > max_length 64


def test_roberta_unbiased_export_keeps_the_identity_labels(tiny_roberta, exported_roberta):
    model = load_model_dir(exported_roberta)
    assert model.spec.inputs == ["input_ids", "attention_mask"]
    assert model.spec.identity_labels == UNBIASED_IDENTITIES and len(model.spec.labels) == 16
    names, ref = detoxify_scores(tiny_roberta, TEXTS)
    assert model.spec.labels[:7] == names  # Detoxify.predict drops logits 7..15; we keep them
    probs = open_classifier(model, threads=1).predict(TEXTS).probs
    assert np.abs(probs[:, :7] - ref).max() <= 1e-5


def test_int8_reports_its_drift(tiny_roberta, tmp_path):
    report = export_detoxify(tiny_roberta, tiny_roberta.parent, tmp_path / "q", int8=True, log=lambda s: None)
    labels = json.loads((tmp_path / "q" / "labels.json").read_text())
    assert labels["quantization"] == "int8-dynamic"
    assert 0 < report.int8_max_abs_prob < 0.1 and labels["parity"]["int8_max_abs_prob"] == report.int8_max_abs_prob


def test_refuses_to_write_when_parity_is_worse_than_the_tolerance(tiny_bert, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ModelError, match="nothing written"):
        export_detoxify(tiny_bert, tiny_bert.parent, out, tolerance=1e-12, log=lambda s: None)
    assert not out.exists()


def test_cli_export_then_list_and_show(tiny_bert, tmp_path):
    out = tmp_path / "cli"
    runner = CliRunner()
    result = runner.invoke(main, ["models", "export-detoxify", "--checkpoint", str(tiny_bert), "--config-dir",
                                  str(tiny_bert.parent), str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    sha = load_model_dir(out).sha256
    assert f"sha256 {sha}" in result.output
    listed = runner.invoke(main, ["models", "list"], env={"HOLISTIC_TOXICITY_MODEL": str(out)})
    assert listed.exit_code == 0 and sha in listed.output and "bundled" in listed.output
    shown = runner.invoke(main, ["models", "show", str(out), "--json"])
    assert json.loads(shown.output)["sha256"] == sha
    again = runner.invoke(main, ["models", "export-detoxify", "--checkpoint", str(tiny_bert), "--config-dir",
                                 str(tiny_bert.parent), str(out)])  # fmt: skip
    assert again.exit_code == 1 and "not empty" in again.output
