"""The metric families this gateway serves: the one place the gateway learns them (today from settings)."""

from __future__ import annotations

from holistic.settings import Settings


def families(settings: Settings) -> list[str]:
    """Every family whose consumer group the gateway creates, watches for backlog and reads statistics of."""
    return list(settings.families)
