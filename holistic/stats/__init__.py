"""Mergeable statistics: fields and their names, sketches, per-instance state, intervals, metric values."""
