"""Every fixed rule of a SubmitPredictionsRequest, in one place.

Three paths check a batch: the C wire proof (gateway/_wireproof.c), the columns (gateway/columns.py) and
the walk that names every bad field (gateway/validation.py). The walk decides; the other two may only
prove a batch valid. All three read their limits and character classes from here: the C module gets
them through `configure` when gateway/wire_proof.py loads it, so the C holds no copy of them. The limits
a deployment sets (batch size, text bytes, references, map entries, documents, clock skew) live in
holistic/settings.py and reach every path as arguments. tests/gateway/test_request_rules.py sends each
rule's failing example through the gateway with the C path on and off and expects the same answer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class FixedRules:
    """Limits that are part of the API's contract, not a deployment's settings."""

    name_chars: int = 128  # model, scenario
    name_punctuation: str = "._:/@+-"  # besides letters and digits; a name starts with a letter or digit
    tag_chars: int = 64  # groups keys and values, perturbation names (the name's characters)
    batch_id_chars: int = 128
    batch_id_punctuation: str = "._:/@+=-"  # any position
    id_chars: int = 256  # prediction ids, original_id, ranking document ids (code points)
    metadata_key_chars: int = 128
    metadata_value_chars: int = 4096
    min_produced_at_s: int = 946_684_800  # 2000-01-01T00:00:00Z
    max_duration_s: int = 86_400  # latency and time to first token: under a day
    probability_sum_tolerance: float = 1e-4  # choice probabilities sum to 1 within this

    def as_c_table(self) -> dict[str, int | float | str]:
        """What gateway/_wireproof.c's `configure` reads (every field, by name)."""
        return asdict(self)


RULES = FixedRules()


def _name_re(most: int) -> re.Pattern[str]:
    return re.compile(rf"[A-Za-z0-9][A-Za-z0-9{re.escape(RULES.name_punctuation)}]{{0,{most - 1}}}")


def _rule_text(most: int) -> str:
    punct = " ".join(RULES.name_punctuation)
    return f"1-{most} characters: letters, digits and {punct}, starting with a letter or digit"


NAME_RE = _name_re(RULES.name_chars)
NAME_RULE = _rule_text(RULES.name_chars)
TAG_RE = _name_re(RULES.tag_chars)
TAG_RULE = _rule_text(RULES.tag_chars)
BATCH_ID_RE = re.compile(rf"[A-Za-z0-9{re.escape(RULES.batch_id_punctuation)}]{{1,{RULES.batch_id_chars}}}")
BATCH_ID_RULE = f"1-{RULES.batch_id_chars} characters: letters, digits and {' '.join(RULES.batch_id_punctuation)}"
