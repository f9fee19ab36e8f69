"""The dashboard's web server: a static page, a JSON API over the gateway, and live updates as SSE.

The browser never talks gRPC: this server holds one channel to the gateway (with the bearer token),
answers `/api/*` with canonical protobuf JSON (`/api/compare` is the gateway's CompareProfiles, the same
tests and decision as `holistic compare`), and streams `/api/events`: the model list whenever it
changes and a fresh profile of every model each time the gateway's WatchProfile sends one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import grpc
from aiohttp import web
from aiohttp_sse import sse_response

from holistic_dashboard.gateway_link import WINDOWS, GatewayError, GatewayLink, to_json
from holistic_dashboard.host_guard import host_guard

log = logging.getLogger("holistic.dashboard")

STATIC = Path(__file__).parent / "static"
LINK: web.AppKey[GatewayLink] = web.AppKey("link", GatewayLink)
POLL_S: web.AppKey[float] = web.AppKey("poll_s", float)
CLOSING: web.AppKey[asyncio.Event] = web.AppKey("closing", asyncio.Event)
HTTP_STATUS = {
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


@web.middleware
async def gateway_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A gateway status becomes a JSON error the page shows as it is (502 for the gateway's own failures)."""
    try:
        return await handler(request)
    except GatewayError as exc:
        return _error(HTTP_STATUS.get(exc.code, 502), exc.code.name, exc.message)


def _window(request: web.Request) -> str:
    window = request.query.get("window", "all")
    if window not in WINDOWS:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": {"code": "INVALID_ARGUMENT", "message": f"unknown window {window!r}"}}),
            content_type="application/json",
        )
    return window


def _model(request: web.Request) -> str:
    model = request.query.get("model", "")
    if not model:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": {"code": "INVALID_ARGUMENT", "message": "model is required"}}),
            content_type="application/json",
        )
    return model


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def models(request: web.Request) -> web.Response:
    summaries = await request.app[LINK].list_models()
    return web.json_response({"models": [to_json(s) for s in summaries]})


async def profile(request: web.Request) -> web.Response:
    return web.json_response(to_json(await request.app[LINK].profile(_model(request), _window(request))))


async def comparison(request: web.Request) -> web.Response:
    """The gateway's CompareProfiles of the window against the one just before it, as its JSON: `before`
    and `after` (the two profiles), `cells` (each with its verdict, p, adjusted p, interval, test, and
    whether it matters), the decision over every radar axis and its summary. All time has no window before
    it: only `after`, and no cells."""
    link, model, window = request.app[LINK], _model(request), _window(request)
    if window == "all":
        return web.json_response({"after": to_json(await link.profile(model, window)), "before": None, "cells": []})
    return web.json_response(to_json(await link.compare(model, window)))


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `models` when the list changes, `profile` per update, `problem` on errors."""
    link = request.app[LINK]
    window = _window(request)
    queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue(maxsize=1000)
    watches: dict[str, asyncio.Task[None]] = {}

    async def watch(model: str) -> None:
        delay = 0.5
        while True:
            try:
                async for p in link.watch(model, window):
                    await queue.put(("profile", to_json(p)))
                    delay = 0.5
            except GatewayError as exc:
                await queue.put(("problem", {"code": exc.code.name, "message": f"watching {model}: {exc.message}"}))
            await asyncio.sleep(delay)  # the stream ended (gateway restart): watch again
            delay = min(delay * 2, 10.0)

    async def poll_models() -> None:
        known: object = None
        while True:
            try:
                listed = [to_json(s) for s in await link.list_models()]
                if listed != known:
                    known = listed
                    await queue.put(("models", listed))
                for s in listed:
                    name = str(s["model"])
                    if name not in watches:
                        watches[name] = asyncio.create_task(watch(name), name=f"dashboard-watch-{name}")
            except GatewayError as exc:
                await queue.put(("problem", {"code": exc.code.name, "message": exc.message}))
            await asyncio.sleep(request.app[POLL_S])

    poller = asyncio.create_task(poll_models(), name="dashboard-models")
    closing = request.app[CLOSING]
    try:
        async with sse_response(request, headers={"Cache-Control": "no-cache"}) as resp:
            resp.ping_interval = 5  # a closed page is noticed within seconds, and its watches end
            while resp.is_connected() and not closing.is_set():  # a closed page shows as a failed ping
                try:
                    event, data = await asyncio.wait_for(queue.get(), timeout=1.0)
                except TimeoutError:
                    continue
                try:
                    await resp.send(json.dumps(data), event=event)
                except (ConnectionResetError, RuntimeError):
                    break
        return resp
    finally:
        tasks = [poller, *watches.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def create_app(link: GatewayLink, poll_s: float = 2.0, allowed_hosts: Iterable[str] = ()) -> web.Application:
    app = web.Application(middlewares=[host_guard(allowed_hosts), gateway_errors])
    app[LINK] = link
    app[POLL_S] = poll_s
    app[CLOSING] = asyncio.Event()
    app.router.add_get("/", index)
    app.router.add_get("/api/models", models)
    app.router.add_get("/api/profile", profile)
    app.router.add_get("/api/compare", comparison)
    app.router.add_get("/api/events", events)
    app.router.add_static("/static/", STATIC)

    async def end_streams(app: web.Application) -> None:
        app[CLOSING].set()  # event streams end by themselves within a second

    async def close_link(app: web.Application) -> None:
        await app[LINK].close()

    app.on_shutdown.append(end_streams)
    app.on_cleanup.append(close_link)
    return app


class Dashboard:
    """The server on an event loop the caller owns (the CLI's, or a test's thread)."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        poll_s: float = 2.0,
        credentials: grpc.ChannelCredentials | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        """credentials: TLS or mutual TLS to the gateway (holistic_client.client.tls_credentials);
        allowed_hosts: names besides IP literals and localhost that the page may be reached by."""
        self.target = target
        self.token = token
        self.poll_s = poll_s
        self.credentials = credentials
        self.allowed_hosts = list(allowed_hosts)
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        link = GatewayLink(self.target, self.token, credentials=self.credentials)
        self.runner = web.AppRunner(create_app(link, self.poll_s, self.allowed_hosts), shutdown_timeout=3)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port)
        await site.start()
        bound = self.runner.addresses[0]
        self.url = f"http://{host}:{bound[1]}/"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def serve(
    address: str,
    target: str,
    token: str | None,
    on_ready: Callable[[str], None] | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    allowed_hosts: Iterable[str] = (),
) -> None:
    host, _, port = address.rpartition(":")
    dashboard = Dashboard(target, token, credentials=credentials, allowed_hosts=allowed_hosts)
    url = await dashboard.start(host or "127.0.0.1", int(port))
    # As a container's PID 1 the process has no default SIGTERM action: without a handler
    # `docker stop` waits out the grace period and SIGKILLs it.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if on_ready:
        on_ready(url)
    try:
        await stop.wait()
    finally:
        await dashboard.stop()
