"""HELM's efficiency run cell per scenario (efficiency_metrics.py, crfm-helm 0.5.16): the means over the
scenario's unperturbed requests of `inference_runtime` (the request's latency), `num_prompt_tokens`,
`num_completion_tokens` and `num_output_tokens` (= completion tokens: no echoed prompt), each over the
requests that carry it (HELM adds None as nothing; its tokenizer always counts tokens, the service takes
the client's counts, so a request without them is left out of those means). The family's own latency
percentiles and objective cover every request, perturbed or not: each is a real call to the model.
"""

from __future__ import annotations

import math

from holistic.stats.mergeable import Stats
from holistic.stats.metric_values import mean
from holistic.stats.names import Fields, key
from holistic.v1.profile_pb2 import Metric

# field prefix -> HELM's metric name
FIELDS = {"rt": "inference_runtime", "tp": "num_prompt_tokens", "tc": "num_completion_tokens"}
OUTPUT_TOKENS = "num_output_tokens"
HELM = "helm"  # "<scenario>|helm|<field>|n" (sum, sumsq)

Cells = dict[str, dict[str, list[float]]]  # scenario -> field -> values


def add(cells: Cells, scenario: str, latency: float | None, prompt: float | None, completion: float | None) -> None:
    cell = cells.setdefault(scenario, {})
    for field, value in (("rt", latency), ("tp", prompt), ("tc", completion)):
        if value is not None:
            cell.setdefault(field, []).append(value)


def emit(st: Stats, cells: Cells) -> None:
    for scn, cell in cells.items():
        for field, values in cell.items():
            st.incr(key(scn, HELM, field, "n"), len(values))
            st.add(key(scn, HELM, field, "sum"), math.fsum(values))
            st.add(key(scn, HELM, field, "sumsq"), math.fsum(v * v for v in values))


def scenario_metrics(f: Fields, family: str) -> list[Metric]:
    """HELM's efficiency metrics of one scenario, from its fields (prefix "<scenario>|" cut off)."""
    out = []
    for field, name in FIELDS.items():
        n = f.num(HELM, field, "n")
        if n:
            s, ss = f[key(HELM, field, "sum")], f.num(HELM, field, "sumsq")
            unit = "s" if field == "rt" else "tokens"
            out.append(mean(name, family, n, s, ss, unit=unit, lower_is_better=field == "rt"))
            if field == "tc":
                out.append(mean(OUTPUT_TOKENS, family, n, s, ss, unit=unit))
    return out
