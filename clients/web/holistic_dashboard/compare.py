"""The dashboard's window comparison is the client's (holistic_client.compare): one rule for which
moves matter, shared with `holistic compare`."""

from holistic_client.compare import Change, compare, previous_range

__all__ = ["Change", "compare", "previous_range"]
