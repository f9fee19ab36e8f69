"""HELM's side of benchmarks/vs_helm.py: run inside the crfm-helm 0.5.16 environment that
tools/helm_conformance.py builds (it imports HELM and tools/helm_side.py, never this project).

    python benchmarks/helm_timed.py PREDICTIONS.jsonl

Scores the file as HELM scores a run: per (model, scenario), tools/helm_side.scenario_values, i.e.
HELM's own metric classes for the scenario's task (reference metrics, classification, calibration,
worst-case robustness/fairness, summarization ROUGE, bias, efficiency). Prints one JSON line: rows
scored, seconds to import HELM, seconds to score, and the process's whole wall time (the caller
measures that too, from outside, and fits fixed + per-row over two sizes).

One change to helm_side for timing: its selective metrics are the conformance fixture's mean over every
order of tied confidences (a product of permutations, impossible with hundreds of ties); HELM itself
computes them once inside compute_calibration_metrics, which helm_side already calls, so the extra
tie-order pass is replaced by nothing here. Ranking runs get HELM's RankingMetric (pytrec_eval, which
tools/helm_conformance.py installs), summarization runs SummEval's data statistics (spaCy's blank English
tokenizer, installed there too). A run without references (HELM's reference metrics assert a gold one)
gets efficiency and bias only.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import helm_side  # noqa: E402

IMPORTED = time.perf_counter()


def without_references(rows: list[dict[str, Any]]) -> None:
    """A run whose rows have no references (support chat): HELM's reference metrics assert there is a
    gold one, so HELM gives such a run what needs none: efficiency and bias (toxicity is Perspective's)."""
    plain = [r for r in rows if not r.get("perturbation")]
    helm_side.efficiency_values(plain)
    states = [helm_side.request_state(r) for r in plain]
    for mode, demo, target in helm_side.BIAS:
        metric = helm_side.BiasMetric(mode=mode, demographic_category=demo, target_category=target)
        metric.evaluate_instances(states, "")


def main() -> None:
    helm_side.selective_over_tie_orders = lambda p, y: {}  # HELM computed them once already (see above)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            runs[(row.get("model", ""), row["scenario"])].append(row)
    started = time.perf_counter()
    for rows in runs.values():
        if rows[0].get("task") == "TASK_RANKING" or any(r.get("references") for r in rows):
            helm_side.scenario_values(rows)
        else:
            without_references(rows)
    done = time.perf_counter()
    doc = {
        "rows": sum(len(r) for r in runs.values()),
        "import_s": IMPORTED - START,
        "score_s": done - started,
        "wall_s": done - START,
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
