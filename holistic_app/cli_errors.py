"""The `holistic` command's one boundary for errors a user can cause: one line on stderr, no traceback."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from holistic.errors import ConfigError
from holistic_client.errors import ClientError


def fail(message: str, code: int = 2) -> None:
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}")
    raise SystemExit(code)


class OneLineErrors(click.Group):
    """A group whose commands' configuration, gateway, connection and file errors end in one line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (ConfigError, ClientError) as exc:  # a ClientError is the gateway's answer, its field named
            fail(str(exc))
        except Exception as exc:
            redis = sys.modules.get("redis")  # imported by the commands that use it: `submit` does not
            if redis is not None and isinstance(exc, redis.ConnectionError):
                fail(f"cannot reach Redis: {exc}")
            if redis is not None and isinstance(exc, redis.RedisError):
                fail(f"Redis answered with an error: {exc}")
            if isinstance(exc, OSError):
                fail(str(exc))
            raise
