"""Deciding between two profiles: significance tests, the comparison of cells, the bucket bootstrap."""
