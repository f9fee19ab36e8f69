"""Fixtures for the clients' live tests: workers running in threads, the dashboard, a real Chromium."""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from google.protobuf import json_format
from google.protobuf.message import Message

from holistic.families import Family
from holistic.settings import Settings
from holistic_dashboard.server import Dashboard
from metric_services.runner import Worker

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def need_tool(path: str, install: str) -> None:
    """Skip here when a tool is missing; fail under CI, where ./dev test installs it."""
    if shutil.which(path) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{path} is not installed ({install}); ./dev test installs it")
        pytest.skip(f"{path} is not installed ({install})")


class LiveWorkers:
    """One worker per family, each looping in its own thread as `holistic worker` does."""

    def __init__(self, settings: Settings, redis_socket: str, families: tuple[str | Family, ...]) -> None:
        """`families`: names, or configured families (e.g. summarization with semantic similarity off)."""
        fast = settings.model_copy(update={"block_ms": 50})
        self.clients = [redis.Redis(unix_socket_path=redis_socket) for _ in families]
        self.workers = [Worker(f, fast, c) for f, c in zip(families, self.clients, strict=True)]
        self.threads = [threading.Thread(target=w.run, daemon=True) for w in self.workers]
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        for w in self.workers:
            w.stopping.set()
        for t in self.threads:
            t.join(10)
        for c in self.clients:
            c.close()


@pytest.fixture
def live_workers(settings: Settings, redis_server: str) -> Iterator[LiveWorkers]:
    workers = LiveWorkers(settings, redis_server, ("accuracy", "efficiency"))
    yield workers
    workers.stop()


class DashboardThread:
    """The dashboard server on its own event loop in a thread, on a free port."""

    def __init__(self, target: str, token: str | None, **kwargs: Any) -> None:
        self.dashboard = Dashboard(target, token, poll_s=0.2, **kwargs)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url = self._run(self.dashboard.start("127.0.0.1", 0))

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self._run(self.dashboard.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def make_dashboard() -> Iterator[Callable[..., DashboardThread]]:
    started: list[DashboardThread] = []

    def make(target: str, token: str | None = None, **kwargs: Any) -> DashboardThread:
        d = DashboardThread(target, token, **kwargs)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Debian's chromedriver: nothing is downloaded."""
    need_tool(CHROMIUM, "apt-get install -y chromium")
    need_tool(CHROMEDRIVER, "apt-get install -y chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile_dir = Path(tempfile.mkdtemp(prefix="holistic-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1500,2000", f"--user-data-dir={profile_dir}"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile_dir, ignore_errors=True)


def profile_differences(a: Message, b: Message, rel: float = 1e-12) -> list[str]:
    """Where two profiles differ, floats compared to `rel`: the same predictions sent in batches that
    workers happen to apply in another grouping (a read's batches share one script) sum in another
    order, which moves a float's last bits (a Go-vs-Python comparison failed on 2.0281 vs
    2.0281000000000002)."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y:
                    out.append(f"{path}.{k}: only in {'second' if k in y else 'first'}")
                else:
                    walk(x[k], y[k], f"{path}.{k}")
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                out.append(f"{path}: {len(x)} vs {len(y)} items")
            for i, (u, v) in enumerate(zip(x, y, strict=False)):
                walk(u, v, f"{path}[{i}]")
        elif isinstance(x, float) or isinstance(y, float):
            if not (isinstance(x, int | float) and isinstance(y, int | float)) or not math.isclose(
                x, y, rel_tol=rel, abs_tol=rel
            ):
                out.append(f"{path}: {x!r} vs {y!r}")
        elif x != y:
            out.append(f"{path}: {x!r} vs {y!r}")

    walk(json_format.MessageToDict(a), json_format.MessageToDict(b), "")
    return out
