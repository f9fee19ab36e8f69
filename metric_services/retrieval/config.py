"""The retrieval family's own settings: HOLISTIC_RETRIEVAL_* (the tracks and the binary adapter's
answers are shared/ranking_score.py's, which every family scoring rankings reads)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metric_services.shared.ranking_score import RankingConfig


class RetrievalConfig(RankingConfig):
    model_config = SettingsConfigDict(env_prefix="HOLISTIC_RETRIEVAL_", extra="ignore", frozen=True)

    valid_topk: int | None = Field(
        default=None,
        ge=1,
        description="HELM's valid_topk: also report each metric over the documents whose retriever_rank is at "
        'most this, named "<metric> (topk=<k>)". Unset: no topk variants.',
    )
    judged_final: bool = Field(
        default=False,
        description="Score a ranking that arrives with judgments at once, without per-query state (cheaper: no "
        "state read or write per query); judgments sent later for it are then counted apart, not joined. "
        "Default: every ranking is per-query state, so later judgments join those it came with.",
    )
