"""Refuses requests whose `Host` (or, when sent, `Origin`) is not an address this server serves.

A web page on another site can make a browser reach the dashboard through DNS rebinding: its own
name resolves, a moment later, to 127.0.0.1, and the browser sends `Host: evil.example:8765`. The
dashboard holds a tenant's token, so it answers only Host headers that name it: an IP literal or
`localhost` (which no rebinding can produce) or a name in the allowed list
(`HOLISTIC_DASHBOARD_ALLOWED_HOSTS`, for a proxy's name), on the port it listens on. A browser's
`Origin`, when sent, must name the same.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _split(host: str, default_port: int) -> tuple[str, int] | None:
    """(name, port) of a Host header value, or None when it does not parse."""
    try:
        parts = urlsplit("//" + host)
        return (parts.hostname or "").lower(), parts.port or default_port
    except ValueError:
        return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_guard(allowed_names: Iterable[str] = ()) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    names = {n.strip().lower() for n in allowed_names if n.strip()} | {"localhost"}

    def serves(host: str, port: int) -> bool:
        split = _split(host, 80)
        return split is not None and split[1] == port and (split[0] in names or _is_ip(split[0]))

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        port = int(sock[1]) if sock else -1
        origin = request.headers.get("Origin")
        why = None
        if not serves(request.host, port):
            why = f"Host {request.host!r} is not an address of this dashboard"
        elif origin is not None and origin != "null":
            parts = urlsplit(origin)
            if parts.scheme != "http" or not serves(parts.netloc, port):
                why = f"Origin {origin!r} is not this dashboard"
        elif origin == "null":
            why = "Origin null is not this dashboard"
        if why is not None:
            body = json.dumps({"error": {"code": "PERMISSION_DENIED", "message": why}})
            return web.Response(status=403, text=body, content_type="application/json")
        return await handler(request)

    return guard
