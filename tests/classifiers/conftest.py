"""Session fixtures: tiny random Detoxify checkpoints (BERT and RoBERTa), built offline, and their exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.classifiers.detoxify_fixtures import build_bert, build_roberta


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_roberta(tmp_path_factory.mktemp("roberta"))


@pytest.fixture(scope="session")
def exported_roberta(tiny_roberta: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from holistic.classifiers.export_detoxify import export_detoxify

    out = tmp_path_factory.mktemp("exports") / "roberta"
    export_detoxify(tiny_roberta, tiny_roberta.parent, out, log=lambda s: None)
    return out
