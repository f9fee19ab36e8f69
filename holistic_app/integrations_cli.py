"""Commands that run beside the service: Prometheus quality series out, OpenTelemetry spans in."""

from __future__ import annotations

import asyncio
import os
import sys

import click
from rich.console import Console
from rich.markup import escape

from holistic.errors import ConfigError

err = Console(stderr=True, soft_wrap=True)  # an error is one line, however long


@click.command("quality-exporter")
@click.option("--address", default=None, help="host:port of /metrics (default HOLISTIC_QUALITY_ADDRESS).")
def quality_exporter(address: str | None) -> None:
    """Serve profile quality (axes, intervals, main metrics) as Prometheus series."""
    from gateway.quality_exporter import load_quality_settings, serve
    from holistic.process.observability import setup_logging
    from holistic.redis.local import with_local_redis
    from holistic.settings import load_settings

    try:
        settings, quality = with_local_redis(load_settings()), load_quality_settings()
        setup_logging(settings.log_format, settings.log_level)
        asyncio.run(serve(settings, quality, address))
    except (ConfigError, OSError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(2)


@click.command("otlp-receiver")
@click.option("--address", default=None, help="host:port to receive OTLP/gRPC on (default HOLISTIC_OTLP_ADDRESS).")
@click.option(
    "--http-address", default=None, help="host:port of OTLP/HTTP, '' for none (default HOLISTIC_OTLP_HTTP_ADDRESS)."
)
@click.option(
    "--target", default=None,
    help="The gateway (default HOLISTIC_OTLP_TARGET, else the running `holistic up`'s, else 127.0.0.1:50051).",
)  # fmt: skip
def otlp_receiver(address: str | None, http_address: str | None, target: str | None) -> None:
    """Receive OpenTelemetry GenAI spans and log records (OTLP/gRPC and OTLP/HTTP) and submit the
    chat calls among them as predictions, exactly once."""
    from holistic.process.observability import setup_logging
    from holistic.settings import load_settings
    from holistic_client.otlp.receiver import load_otlp_settings, serve

    try:
        overrides = {k: v for k, v in (("address", address), ("target", otlp_target(target))) if v}
        if http_address is not None:
            overrides["http_address"] = http_address
        settings, otlp = load_settings(), load_otlp_settings(**overrides)
        setup_logging(settings.log_format, settings.log_level)
        asyncio.run(serve(otlp))
    except (ConfigError, OSError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(2)


def otlp_target(given: str | None) -> str | None:
    """--target, else HOLISTIC_OTLP_TARGET (None: the settings read it), else the gateway of the `holistic up`
    running here (holistic/process/run_state.py), else None: the settings' default."""
    if given or os.environ.get("HOLISTIC_OTLP_TARGET"):
        return given
    from holistic.process.run_state import running_gateway

    return running_gateway()


COMMANDS = [quality_exporter, otlp_receiver]
