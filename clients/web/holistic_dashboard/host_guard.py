"""Refuses requests whose `Host` (or, when sent, `Origin`) is not a name this server answers to.

A web page on another site can make a browser reach the dashboard through DNS rebinding: its own
name resolves, a moment later, to 127.0.0.1, and the browser sends `Host: evil.example:8765`. The
dashboard holds a tenant's token, so it answers only Host headers that name it: an IP literal or
`localhost` (which no rebinding can produce) or a name in the allowed list
(`HOLISTIC_DASHBOARD_ALLOWED_HOSTS`, for a proxy's name). The name is what rebinding forges; the
port is not checked, since a published compose port, a `kubectl port-forward` or a proxy on 443
each reach it on a port other than the one it listens on. A browser's `Origin`, when sent, must be
http or https and name the same.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _name(host: str) -> str | None:
    """The lower-cased host name of a Host header value (port dropped), or None when it does not parse."""
    try:
        parts = urlsplit("//" + host)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
        return (parts.hostname or "").lower() or None
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

    def serves(host: str) -> bool:
        name = _name(host)
        return name is not None and (name in names or _is_ip(name))

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        why = None
        if not serves(request.host):
            why = f"Host {request.host!r} is not an address of this dashboard"
        elif origin is not None and origin != "null":
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not serves(parts.netloc):
                why = f"Origin {origin!r} is not this dashboard"
        elif origin == "null":
            why = "Origin null is not this dashboard"
        if why is not None:
            body = json.dumps({"error": {"code": "PERMISSION_DENIED", "message": why}})
            return web.Response(status=403, text=body, content_type="application/json")
        return await handler(request)

    return guard
