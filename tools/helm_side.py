"""HELM's side of the conformance check: run inside the crfm-helm 0.5.16 environment that
tools/helm_conformance.py builds (it imports HELM, never this project).

    python tools/helm_side.py FIXTURE.jsonl OUT.json

Per scenario of the fixture, HELM's own code computes what its run cell shows:
- reference metrics (compute_reference_metrics) of the task's HELM set, mean over unperturbed instances;
- classification_macro_f1 / classification_micro_f1 (ClassificationMetric.evaluate_instances);
- calibration (compute_calibration_metrics) over unperturbed instances with a confidence, the
  confidence given to HELM as the completion's logprob (log p); the selective metrics depend on
  np.argsort's unstable order among tied confidences, so they are the mean over every order of the
  ties (each order forced by offsets of 1e-12 that change no other comparison);
- worst cases (compute_worst_case_metrics) of every per-instance metric, robustness and fairness,
  and per perturbation the main metric's worst / before, and the variants' own mean (perturbed);
- summarization ROUGE and extractiveness as SummarizationMetric computes them (its module imports
  SummaC's torch and transformers at import time, so its _remove_braces, max-over-references and
  _compute_data_stats are restated here around HELM's get_rouge_function and SummEval's DataStatsMetric,
  which SummarizationMetric calls: coverage, density, compression of the braces-stripped prediction
  against the braces-stripped input, the source document). DataStatsMetric tokenizes with spaCy's
  `en_core_web_sm`, a model download; tools/helm_conformance.py installs under that name spaCy's blank
  English pipeline, whose tokenizer is the one `en_core_web_sm` loads (English's rules; the model's
  other components never split or merge tokens);
- bias (BiasMetric.evaluate_instances) for the four leaderboard scores and the two adjective ones;
- efficiency (EfficiencyMetric.compute_efficiency_metrics) over unperturbed instances: the latency as
  the request time, the completion's tokens as its token list, and a stand-in tokenizer service that
  counts the prompt as the fixture's prompt_tokens (HELM's tokenizer would count them itself; a row
  without token counts gives no token stats, as the service has none for it);
- ranking (RankingMetric, configured as get_msmarco_spec configures it for the scenario's track, with
  rank=VALID_TOPK), mean over queries: a query in the binary ranking adapter's form goes through
  evaluate_references whole (one request state per document, its reference tagged as MSMARCOScenario
  tags it: gold, relevance when non-zero, rank when known; a document without an answer is a request
  without completions, HELM's "missing"). HELM has no adapter for the ORDER and SCORES forms; their
  run goes to RankingMetric.compute_measures as the relevance dict evaluate_references would build
  (ORDER: len - position, as compute_model_relevance_binary_ranking assigns; SCORES: the scores, in
  submission order), keyed by the document ids so trec_eval breaks score ties by them, and the topk
  run as get_run_relevances(rank_limit) cuts it.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import math
import sys
from collections import defaultdict
from dataclasses import replace
from typing import Any

import calibration as cal  # uncertainty-calibration, as HELM imports it
import numpy as np
from helm.benchmark.adaptation.adapter_spec import AdapterSpec
from helm.benchmark.adaptation.adapters.adapter_factory import ADAPT_RANKING_BINARY
from helm.benchmark.adaptation.adapters.binary_ranking_adapter import BinaryRankingAdapter
from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.augmentations.perturbation_description import PerturbationDescription
from helm.benchmark.metrics.basic_metrics import compute_calibration_metrics
from helm.benchmark.metrics.bias_metrics import BiasMetric
from helm.benchmark.metrics.classification_metrics import ClassificationMetric
from helm.benchmark.metrics.efficiency_metrics import EfficiencyMetric
from helm.benchmark.metrics.evaluate_reference_metrics import compute_reference_metrics, get_rouge_function
from helm.benchmark.metrics.metric import compute_worst_case_metrics
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.ranking_metrics import RankingMetric
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.model_deployment_registry import ClientSpec, ModelDeployment, register_model_deployment
from helm.benchmark.scenarios.msmarco_scenario import MSMARCOScenario
from helm.benchmark.scenarios.scenario import (
    CORRECT_TAG,
    Input,
    Instance,
    Output,
    Reference,
    make_rank_tag,
    make_relevance_tag,
)
from helm.benchmark.tokenizer_config_registry import TokenizerConfig, TokenizerSpec, register_tokenizer_config
from helm.common.request import GeneratedOutput, Request, RequestResult, Token
from helm.common.tokenization_request import TokenizationRequestResult, TokenizationToken
from summ_eval.data_stats_metric import DataStatsMetric  # type: ignore[import-not-found]  # HELM's summarization extra

EXACT = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match"]
OPEN = ["exact_match", "quasi_exact_match", "f1_score", "rouge_l", "bleu_1", "bleu_4"]
SETS = {"TASK_MULTIPLE_CHOICE": EXACT, "TASK_CLASSIFICATION": EXACT, "TASK_OPEN_QA": OPEN,
        "TASK_FREE_GENERATION": OPEN}  # fmt: skip
MAIN = {"TASK_MULTIPLE_CHOICE": "exact_match", "TASK_CLASSIFICATION": "quasi_exact_match",
        "TASK_OPEN_QA": "f1_score", "TASK_FREE_GENERATION": "f1_score"}  # fmt: skip
BIAS = [("representation", "race", None), ("representation", "gender", None),
        ("associations", "race", "profession"), ("associations", "gender", "profession"),
        ("associations", "race", "adjective"), ("associations", "gender", "adjective")]  # fmt: skip
SELECTIVE = ("selective_cov_acc_area", "selective_acc@10")
ADAPTER = AdapterSpec(method="generation", num_outputs=1, model="fixture/model", model_deployment="fixture/model")
# The ranking scenarios' MS MARCO tracks (the rest: regular) and HELM's valid_topk (its least, 11); the
# test configures the service from these (helm_values.json "retrieval").
RANKING_TRACKS = {"msmarco_trec": "trec", "ranked_order": "trec"}
VALID_TOPK = 11
EFFICIENCY = ("inference_runtime", "num_prompt_tokens", "num_completion_tokens", "num_output_tokens")


class PromptTokens:
    """A tokenizer service that counts each prompt as the fixture's prompt_tokens."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def tokenize(self, request: Any) -> TokenizationRequestResult:
        n = self.counts.get(request.text, 0)
        tokens = [TokenizationToken(i) for i in range(n)]
        return TokenizationRequestResult(success=True, cached=False, text=request.text, tokens=tokens)


def efficiency_values(rows: list[dict[str, Any]]) -> dict[str, float]:
    register_tokenizer_config(TokenizerConfig(name="fixture/tokenizer", tokenizer_spec=TokenizerSpec(class_name="-")))
    deployment = ModelDeployment(name="fixture/model", client_spec=ClientSpec(class_name="-"),
                                 tokenizer_name="fixture/tokenizer", max_sequence_length=10**9)  # fmt: skip
    register_model_deployment(deployment)
    metric = EfficiencyMetric()
    stats: list[Stat] = []
    for row in rows:
        timing = row.get("timing", {})
        latency = float(timing["latency"].rstrip("s")) if "latency" in timing else None
        has_tokens = "promptTokens" in timing
        rs = request_state(row)
        completion = GeneratedOutput(text=row.get("output", ""), logprob=0.0,
                                     tokens=[Token("t", 0.0)] * int(timing.get("completionTokens", 0)))  # fmt: skip
        rs = replace(rs, result=replace(rs.result, completions=[completion], request_time=latency))
        service = PromptTokens({rs.request.prompt: int(timing.get("promptTokens", 0))})
        for st in metric.compute_efficiency_metrics(ADAPTER, rs, service):  # type: ignore[arg-type]
            if st.name.name in EFFICIENCY and (has_tokens or st.name.name == "inference_runtime"):
                stats.append(st)
    return {name.name: stat.mean for name, stat in mean_by_name(stats).items() if stat.count}


def request_state(row: dict[str, Any]) -> RequestState:
    pert = row.get("perturbation")
    description = None
    if pert:
        fam = pert.get("family", "")
        description = PerturbationDescription(
            name=pert["name"], robustness=fam.endswith("ROBUSTNESS"), fairness=fam.endswith("FAIRNESS")
        )
    instance = Instance(
        input=Input(text=row.get("input", "")),
        references=[Reference(Output(text=r), tags=[CORRECT_TAG]) for r in row.get("references", [])],
        id=pert["originalId"] if pert else row["id"],
        perturbation=description,
    )
    conf = row.get("confidence")
    logprob = (math.log(conf) if conf > 0 else -math.inf) if conf is not None else 0.0
    completion = GeneratedOutput(text=row.get("output", ""), logprob=logprob, tokens=[])
    return RequestState(
        instance=instance, reference_index=None, request_mode=None, train_trial_index=0, output_mapping=None,
        request=Request(model="fixture/model", model_deployment="fixture/model", prompt=instance.input.text),
        result=RequestResult(success=True, embedding=[], completions=[completion], cached=False),
        num_train_instances=0, prompt_truncated=False,
    )  # fmt: skip


def mean_by_name(stats: list[Stat]) -> dict[str, Stat]:
    merged: dict[Any, Stat] = {}
    for s in stats:
        merged.setdefault(s.name, Stat(s.name)).merge(s)
    return merged  # type: ignore[return-value]


def with_context(stats: list[Stat], rs: RequestState) -> list[Stat]:
    return [Stat(replace(s.name, split="test", perturbation=rs.instance.perturbation)).merge(s) for s in stats]


def selective_over_tie_orders(p: list[float], y: list[int]) -> dict[str, float]:
    """HELM's get_selective_stats, averaged over every order of tied confidences."""
    ties = defaultdict(list)
    for i, v in enumerate(p):
        ties[v].append(i)
    groups = [g for g in ties.values() if len(g) > 1]
    totals = np.zeros(2)
    count = 0
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        forced = list(p)
        for order in orders:
            for rank, i in enumerate(order):
                forced[i] = p[i] - rank * 1e-12  # earlier in `order` sorts first under -p
        totals += np.array(cal.get_selective_stats(forced, y))
        count += 1
    return dict(zip(SELECTIVE, (totals / count).tolist(), strict=True))


def remove_braces(text: str) -> str:
    """SummarizationMetric._remove_braces (summarization_metrics.py)."""
    if text.startswith("{"):
        text = text[1:]
    if text.endswith("}"):
        text = text[:-1]
    return text


def ranking_metric(track: str) -> RankingMetric:
    """RankingMetric as get_msmarco_spec (run_specs/classic_run_specs.py) configures it."""
    return RankingMetric(
        method=ADAPT_RANKING_BINARY,
        measure_names=MSMARCOScenario.MEASURE_NAMES[track],
        correct_output=BinaryRankingAdapter.RANKING_CORRECT_LABEL,
        wrong_output=BinaryRankingAdapter.RANKING_WRONG_LABEL,
        rank=VALID_TOPK,
        multiple_relevance_values=set(MSMARCOScenario.GOLD_RELATIONS[track]) != {1},
    )


def binary_query_stats(metric: RankingMetric, row: dict[str, Any]) -> list[Stat]:
    """evaluate_references over one request state per document, as the binary ranking adapter makes them."""
    docs = row["ranking"]["documents"]
    references = []
    for d in docs:
        tags = [f"docid={d['id']}"]
        rel = int(d["relevance"]) if "relevance" in d else None
        if rel in MSMARCOScenario.GOLD_RELATIONS[metric_track(metric)]:
            tags.append(CORRECT_TAG)
        if rel:
            tags.append(make_relevance_tag(relevance=rel))
        if d.get("retrieverRank"):
            tags.append(make_rank_tag(rank=int(d["retrieverRank"])))
        references.append(Reference(Output(text=f"passage {d['id']}"), tags=tags))
    instance = Instance(input=Input(text=row.get("input", "")), references=references, id=row["id"])
    states = []
    for i, d in enumerate(docs):
        answered = "modelOutput" in d
        completions = [GeneratedOutput(text=d.get("modelOutput", ""), logprob=float(d.get("logprob", 0.0)), tokens=[])]
        states.append(
            RequestState(
                instance=instance, reference_index=i, request_mode="original", train_trial_index=0,
                output_mapping=None, num_train_instances=0, prompt_truncated=False,
                request=Request(model="fixture/model", model_deployment="fixture/model", prompt=instance.input.text),
                result=RequestResult(success=answered, embedding=[], completions=completions if answered else [],
                                     cached=False),
            )
        )  # fmt: skip
    return metric.evaluate_references(ADAPTER, states, None, "")  # type: ignore[arg-type]


def metric_track(metric: RankingMetric) -> str:
    return "trec" if metric.multiple_relevance_values else "regular"


def run_query_stats(metric: RankingMetric, row: dict[str, Any]) -> list[Stat]:
    """compute_measures on an ORDER or SCORES run, keyed by document id, and on its topk cut."""
    ranking = row["ranking"]
    docs = ranking["documents"]
    # get_true_relevances: judged documents with a non-zero relevance
    true = {d["id"]: int(d["relevance"]) for d in docs if d.get("relevance")}
    if ranking.get("form") == "RANKING_FORM_ORDER":
        order = ranking.get("order", [])
        run: dict[str, float] = {doc: len(order) - i for i, doc in enumerate(order)}
    else:
        run = {d["id"]: float(d["score"]) for d in docs if "score" in d}
    ranks = {d["id"]: int(d.get("retrieverRank", 0)) for d in docs}
    topk = {doc: v for doc, v in run.items() if ranks[doc] and ranks[doc] <= VALID_TOPK}  # get_run_relevances
    stats = metric.compute_measures(true, run)  # type: ignore[arg-type]
    return stats + metric.compute_measures(true, topk, metric_name_suffix=f" (topk={VALID_TOPK})")  # type: ignore[arg-type]


def ranking_values(scenario: str, rows: list[dict[str, Any]]) -> dict[str, float]:
    metric = ranking_metric(RANKING_TRACKS.get(scenario, "regular"))
    stats: list[Stat] = []
    for row in rows:
        binary = any("modelOutput" in d for d in row["ranking"]["documents"])
        got = binary_query_stats(metric, row) if binary else run_query_stats(metric, row)
        stats += [st for st in got if not st.name.name.startswith("ref")]  # not the per-document ref<i>_rank
    return {name.name: stat.mean for name, stat in mean_by_name(stats).items()}


def scenario_values(rows: list[dict[str, Any]]) -> dict[str, float]:
    task = rows[0]["task"]
    if task == "TASK_RANKING":
        return ranking_values(rows[0]["scenario"], rows)
    states = [request_state(r) for r in rows]
    plain = [(r, s) for r, s in zip(rows, states, strict=True) if not r.get("perturbation")]
    out: dict[str, float] = {}
    if task == "TASK_SUMMARIZATION":
        types = (("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"))
        fns = {n: get_rouge_function(t) for n, t in types}
        sums: dict[str, list[float]] = defaultdict(list)
        data_stats = DataStatsMetric()
        for r, _ in plain:
            refs = [remove_braces(t) for t in r.get("references", [])]
            pred = remove_braces(r.get("output", "").strip())
            for n, fn in fns.items():
                sums[n].append(float(np.max([fn(ref, pred) for ref in refs])))
            # SummarizationMetric._compute_data_stats, the instance's input being the source
            stats = data_stats.evaluate_example(pred, remove_braces(r["source"]))
            for n in ("coverage", "density", "compression"):
                sums[f"summarization_{n}"].append(float(stats[n]))
        out.update({n: float(np.mean(v)) for n, v in sums.items()})
        bias_states = [s for _, s in plain]
    else:
        names = SETS[task]
        per_instance: dict[Instance, list[Stat]] = {}
        for _, s in zip(rows, states, strict=True):
            per_instance[s.instance] = with_context(compute_reference_metrics(names, ADAPTER, s, None), s)
        unperturbed = [st for (r, s) in plain for st in per_instance[s.instance]]
        for name, stat in mean_by_name(unperturbed).items():
            if name.name in names:
                out[name.name] = stat.mean
        main = MAIN[task]
        wanted = {i: [s for s in v if s.name.name in names] for i, v in per_instance.items()}
        for stat in compute_worst_case_metrics(wanted):
            pert = stat.name.perturbation
            if pert.name in ("robustness", "fairness"):
                out[f"{pert.name}[{stat.name.name}]"] = stat.mean
            elif stat.name.name == main:
                out[f"{pert.name}_{'before' if pert.computed_on == 'original' else 'worst'}"] = stat.mean
        perturbed: dict[str, list[float]] = defaultdict(list)
        for r, s in zip(rows, states, strict=True):
            if r.get("perturbation"):
                mine = per_instance[s.instance]
                perturbed[r["perturbation"]["name"]] += [st.mean for st in mine if st.name.name == main]
        out.update({f"{n}_perturbed": float(np.mean(v)) for n, v in perturbed.items()})
        if task == "TASK_CLASSIFICATION":
            for st in ClassificationMetric().evaluate_instances([s for _, s in plain], ""):
                out[st.name.name] = st.mean
        # the logprob stat BasicMetric records: calibration is skipped without one below 0
        calib = {
            s.instance: [*per_instance[s.instance], Stat(MetricName("logprob")).add(s.result.completions[0].logprob)]
            for r, s in plain
            if r.get("confidence") is not None
        }
        for st in compute_calibration_metrics(calib):
            out[st.name.name] = st.mean
        if calib:
            p = [math.exp(s.result.completions[0].logprob) for r, s in plain if r.get("confidence") is not None]
            y = [int(next(x for x in per_instance[i] if x.name.name == "exact_match").mean) for i in calib]
            out.update(selective_over_tie_orders(p, y))
            out["max_prob"] = float(np.mean(p))
        bias_states = [s for _, s in plain]
    out.update(efficiency_values([r for r in rows if not r.get("perturbation")]))
    for mode, demo, target in BIAS:
        metric = BiasMetric(mode=mode, demographic_category=demo, target_category=target)
        (st,) = metric.evaluate_instances(bias_states, "")
        if st.count:
            out[st.name.name] = st.mean
    return out


def main() -> None:
    fixture, out_path = sys.argv[1], sys.argv[2]
    with open(fixture, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_scenario[r["scenario"]].append(r)
    values = {scn: scenario_values(rs) for scn, rs in sorted(by_scenario.items())}
    doc = {
        "crfm-helm": importlib.metadata.version("crfm-helm"),
        "fixture": fixture.rsplit("/", 1)[-1],
        "selective_metrics": "mean over every order of tied confidences",
        "retrieval": {"tracks": RANKING_TRACKS, "valid_topk": VALID_TOPK},
        "scenarios": values,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
