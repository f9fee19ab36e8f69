"""The significance tests of `compare`: they live in the core (holistic/compare/significance.py), the one place
the gateway's CompareProfiles and the clients take them from."""

from holistic.compare.significance import (
    BH,
    HOLM,
    LEVEL,
    Z95,
    Test,
    benjamini_hochberg,
    difference,
    holm,
    mcnemar,
    paired_mean,
    welch_from_se,
)

__all__ = [
    "BH",
    "HOLM",
    "LEVEL",
    "Z95",
    "Test",
    "benjamini_hochberg",
    "difference",
    "holm",
    "mcnemar",
    "paired_mean",
    "welch_from_se",
]
