"""The quality exporter in its own thread and event loop, for tests that scrape it over HTTP."""

from __future__ import annotations

import asyncio
import threading
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from gateway.quality_exporter import QualityExporter, QualitySettings
from holistic.settings import Settings


class ExporterThread:
    def __init__(self, settings: Settings, quality: QualitySettings) -> None:
        self.exporter = QualityExporter(settings, quality)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = self._run(self.exporter.start("127.0.0.1:0"), timeout=120)
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def _run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def refresh(self) -> None:
        self._run(self.exporter.refresh())

    def scrape(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """Every sample on /metrics: (name, labels) -> value."""
        with urllib.request.urlopen(self.url, timeout=10) as reply:
            text = reply.read().decode()
        return {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def stop(self) -> None:
        self._run(self.exporter.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
