"""Random-weight Detoxify checkpoints built offline: a vocabulary trained here, a config, a state_dict.

Real Detoxify weights come from GitHub releases, which nothing here may download; the architecture,
checkpoint format and tokenizer files are what matter for the export path, and these reproduce them.
Used by the tests (tiny) and benchmarks/toxicity_models.py (bert-base).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
ORIGINAL_CLASSES = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
UNBIASED_CLASSES = ["toxicity", "severe_toxicity", "obscene", "identity_attack", "insult", "threat", "sexual_explicit"]
UNBIASED_IDENTITIES = [
    "male", "female", "homosexual_gay_or_lesbian", "christian", "jewish", "muslim", "black", "white",
    "psychiatric_or_mental_illness",
]  # fmt: skip
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


def training_text() -> list[str]:
    """Local text to train a vocabulary on: the metric docs and word lists (files that rarely change, so the
    vocabulary, and what the tests see, does not move with every README edit)."""
    files = [
        ROOT / "docs" / "metrics.md",
        ROOT / "metric_services" / "bias" / "word_lists.json",
        ROOT / "holistic" / "data" / "README.md",
    ]
    return [line for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_bert(directory: Path, *, size: dict[str, int] = TINY, vocab_size: int = 1000, max_length: int = 64,
               seed: int = 0, embedding_rows: int | None = None, init: float = 0.2) -> Path:  # fmt: skip
    """Detoxify `original` layout: BertForSequenceClassification, 6 classes, a WordPiece vocabulary."""
    import torch
    import transformers
    from tokenizers import BertWordPieceTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(training_text(), vocab_size=vocab_size, min_frequency=1)
    wp.save_model(str(directory))  # vocab.txt
    # transformers 5: BertTokenizerFast(vocab_file=...) silently ignores the file; load the directory instead.
    tok = transformers.BertTokenizer.from_pretrained(str(directory), model_max_length=max_length)
    assert len(tok) == wp.get_vocab_size(), (len(tok), wp.get_vocab_size())
    tok.save_pretrained(str(directory))
    rows = max(embedding_rows or 0, len(tok))  # bert-base has 30,522 rows whatever the trained vocabulary
    # A wide init (bert's is 0.02) spreads the tiny model's random probabilities away from 0.5.
    config = transformers.BertConfig(vocab_size=rows, max_position_embeddings=max(max_length, 512), num_labels=6,
                                     initializer_range=init, **size)  # fmt: skip
    config.save_pretrained(str(directory))
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(config)
    arch = {"model_type": "bert-base-uncased", "model_name": "BertForSequenceClassification",
            "tokenizer_name": "BertTokenizer", "num_classes": 6}  # fmt: skip
    return _save(directory, arch, {"classes": ORIGINAL_CLASSES}, model.state_dict())


def build_roberta(directory: Path, *, size: dict[str, int] = TINY, vocab_size: int = 800, max_length: int = 64,
                  seed: int = 0) -> Path:  # fmt: skip
    """Detoxify `unbiased` layout: RobertaForSequenceClassification, 7 classes + 9 identity logits."""
    import torch
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(training_text(), vocab_size=vocab_size, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])  # fmt: skip
    bpe.save_model(str(directory))  # vocab.json, merges.txt
    tok = transformers.RobertaTokenizer.from_pretrained(str(directory), model_max_length=max_length)
    tok.save_pretrained(str(directory))
    config = transformers.RobertaConfig(vocab_size=len(tok), max_position_embeddings=max_length + 2, num_labels=16,
                                        pad_token_id=1, bos_token_id=0, eos_token_id=2, initializer_range=0.2,
                                        type_vocab_size=1, **size)  # fmt: skip
    config.save_pretrained(str(directory))
    torch.manual_seed(seed)
    model = transformers.RobertaForSequenceClassification(config)
    arch = {"model_type": "roberta-base", "model_name": "RobertaForSequenceClassification",
            "tokenizer_name": "RobertaTokenizer", "num_classes": 16}  # fmt: skip
    dataset = {"classes": UNBIASED_CLASSES, "identity_classes": UNBIASED_IDENTITIES}
    return _save(directory, arch, dataset, model.state_dict())


def _save(directory: Path, arch: dict[str, Any], dataset: dict[str, Any], state_dict: dict[str, Any]) -> Path:
    import torch

    path = directory / "checkpoint.ckpt"
    torch.save({"config": {"arch": {"args": arch}, "dataset": {"args": dataset}}, "state_dict": state_dict}, path)
    return path


def detoxify_offline(checkpoint: Path, config_dir: Path) -> Any:
    """`Detoxify` loaded with no network: its first from_pretrained(model_type) must see a local dir."""
    import torch
    from detoxify import Detoxify

    loaded = torch.load(checkpoint, map_location="cpu", weights_only=False)
    loaded["config"]["arch"]["args"]["model_type"] = str(config_dir)
    local = checkpoint.with_name(checkpoint.stem + ".local.ckpt")
    torch.save(loaded, local)
    return Detoxify(checkpoint=str(local), huggingface_config_path=str(config_dir))
