"""The retrieval family's own settings: HOLISTIC_RETRIEVAL_*."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.families import FamilyConfig

Track = Literal["regular", "trec"]


class RetrievalConfig(FamilyConfig):
    model_config = SettingsConfigDict(env_prefix="HOLISTIC_RETRIEVAL_", extra="ignore", frozen=True)

    default_track: Track = Field(
        default="regular",
        description="HELM's MS MARCO track of a scenario not in `tracks`: regular (binary judgments, main "
        "metric RR@10) or trec (graded judgments binarized for RR/Recall/Success, NDCG@k too, main NDCG@10).",
    )
    tracks: dict[str, Track] = Field(
        default_factory=dict, description='Per scenario track, JSON: {"msmarco_trec": "trec"}.'
    )
    valid_topk: int | None = Field(
        default=None,
        ge=1,
        description="HELM's valid_topk: also report each metric over the documents whose retriever_rank is at "
        'most this, named "<metric> (topk=<k>)". Unset: no topk variants.',
    )
    correct_output: str = Field(default="Yes", description="The binary ranking adapter's relevant answer.")
    wrong_output: str = Field(default="No", description="The binary ranking adapter's not-relevant answer.")

    def track(self, scenario: str) -> Track:
        return self.tracks.get(scenario, self.default_track)
