"""Metric families (one module each) and the worker runner they share."""
