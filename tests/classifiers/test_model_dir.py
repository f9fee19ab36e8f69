"""Model directories are validated with messages that name the file and the problem."""

from __future__ import annotations

import json
import shutil

import pytest

from holistic.classifiers.model_dir import DEFAULT_MODEL_DIR, ModelError, load_model_dir, manifest_sha256


def copy_default(tmp_path):
    d = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, d)
    return d


def test_hash_is_the_manifest_of_the_files_that_decide_scores(tmp_path):
    m = load_model_dir(copy_default(tmp_path))
    assert set(m.files) == {"model.onnx", "labels.json"}
    assert m.sha256 == manifest_sha256(m.files) == load_model_dir(None).sha256
    (m.path / "LICENSE").write_text("changed")  # not a scoring file
    assert load_model_dir(m.path).sha256 == m.sha256
    labels = json.loads((m.path / "labels.json").read_text())
    labels["detects"] = "x"
    (m.path / "labels.json").write_text(json.dumps(labels))
    assert load_model_dir(m.path).sha256 != m.sha256


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: shutil.rmtree(d), "does not exist"),
        (lambda d: (d / "labels.json").unlink(), "labels.json is missing"),
        (lambda d: (d / "model.onnx").unlink(), "model.onnx is missing"),
        (lambda d: (d / "labels.json").write_text("{"), "is not JSON"),
        (lambda d: _patch(d, primary="toxicity"), "primary label 'toxicity' is not one of labels"),
        (lambda d: _patch(d, kind="transformer", max_length=512, inputs=["input_ids"]), "tokenizer.json is missing"),
        (lambda d: _patch(d, kind="transformer"), "needs max_length and inputs"),
        (lambda d: _patch(d, apply="relu"), "apply"),
    ],
)
def test_bad_directories_fail_clearly(tmp_path, edit, message):
    d = copy_default(tmp_path)
    edit(d)
    with pytest.raises(ModelError, match=message):
        load_model_dir(d)


def _patch(d, **changes):
    labels = json.loads((d / "labels.json").read_text())
    labels.update(changes)
    (d / "labels.json").write_text(json.dumps(labels))


def test_a_worker_with_a_bad_model_stops_before_reading(tmp_path):
    from click.testing import CliRunner

    from holistic_app.cli import main

    env = {"HOLISTIC_TOXICITY_MODEL": str(tmp_path / "nope"), "REDIS_URL": "unix:///nonexistent.sock"}
    result = CliRunner().invoke(main, ["worker", "toxicity"], env=env)
    assert result.exit_code == 2 and "does not exist" in " ".join(result.output.split())
