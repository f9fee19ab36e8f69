"""A ranking prediction's per-query score, for every family that needs one (the retrieval family's
scenario metrics, and the main metric the robustness and fairness worst cases take).

The track of a ranking scenario (HELM's MS MARCO regular or TREC track) decides its main metric
and how judgments count, so it is read here, from HOLISTIC_RETRIEVAL_DEFAULT_TRACK and
HOLISTIC_RETRIEVAL_TRACKS, the same variables for every family: a family that scores rankings
agrees with the others on what a query scored.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.families import FamilyConfig, load_config
from holistic.v1 import prediction_pb2 as pb
from metric_services.shared.ranking_measures import MAIN_METRIC, MAX_K, Track, measures, names
from metric_services.shared.ranking_runs import form, judgments, run


class RankingConfig(FamilyConfig):
    """How ranking scenarios are scored: HOLISTIC_RETRIEVAL_* (the retrieval family adds its own)."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_RETRIEVAL_", extra="ignore", frozen=True)

    default_track: Track = Field(
        default="regular",
        description="HELM's MS MARCO track of a scenario not in `tracks`: regular (binary judgments, main "
        "metric RR@10) or trec (graded judgments binarized for RR/Recall/Success, NDCG@k too, main NDCG@10).",
    )
    tracks: dict[str, Track] = Field(
        default_factory=dict, description='Per scenario track, JSON: {"msmarco_trec": "trec"}.'
    )
    correct_output: str = Field(default="Yes", description="The binary ranking adapter's relevant answer.")
    wrong_output: str = Field(default="No", description="The binary ranking adapter's not-relevant answer.")

    def track(self, scenario: str) -> Track:
        return self.tracks.get(scenario, self.default_track)


@lru_cache(maxsize=1)
def ranking_config() -> RankingConfig:
    """The environment's ranking settings, read once (a bad variable raises ConfigError naming it)."""
    return load_config(RankingConfig)  # type: ignore[return-value]


def ranking_main_metric(scenario: str) -> str:
    """HELM's main metric of a ranking scenario: RR@10 on the regular track, NDCG@10 on TREC."""
    return MAIN_METRIC[ranking_config().track(scenario)]


def ranking_scores(p: pb.Prediction, config: RankingConfig | None = None) -> dict[str, float] | None:
    """The query's value of every metric of its track (HELM's names), on the judgments it carries;
    None without a judgment (trec_eval scores no such query)."""
    cfg = config or ranking_config()
    ranking = p.ranking
    rels = judgments(ranking)
    if not rels:
        return None
    track = cfg.track(p.scenario)
    ids = run(ranking, form(ranking), cfg.correct_output, cfg.wrong_output, MAX_K)
    values = measures([rels.get(d, 0) for d in ids], list(rels.values()), track)
    return dict(zip(names(track), values, strict=True))
