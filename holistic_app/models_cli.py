"""`holistic models ...`: the classifier models (list, show, export-detoxify); bare `models` lists evaluated LMs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from holistic.errors import ConfigError
from holistic_client.cli import Connect, target_option, token_option
from holistic_client.cli import models as served_models

if TYPE_CHECKING:
    from holistic.classifiers.model_dir import ModelDir

console = Console(soft_wrap=True)


@click.group(invoke_without_command=True)
@target_option
@token_option
@click.pass_context
def models(ctx: click.Context, target: str, connect: Connect) -> None:
    """Without a subcommand: the models the service has scored. Subcommands: classifier models."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(served_models, target=target, connect=connect)


def _configured() -> Path | None:
    """The toxicity family's model directory (HOLISTIC_TOXICITY_MODEL), as its worker would read it."""
    from holistic.families.registry import load_family

    try:
        return load_family("toxicity").configured().config.model  # type: ignore[attr-defined]
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from exc


def _load(path: Path | None) -> ModelDir:
    from holistic.classifiers.model_dir import ModelError, load_model_dir  # pydantic: not for every command

    try:
        return load_model_dir(path)
    except ModelError as exc:
        raise click.ClickException(str(exc)) from exc


@models.command("list")
def list_models() -> None:
    """The classifier the toxicity and bias workers load (HOLISTIC_TOXICITY_MODEL), and the bundled default."""
    configured = _configured()
    rows = [("loaded", configured)] + ([("bundled", None)] if configured else [])
    for role, path in rows:
        m = _load(path)
        role = role + (" (bundled default)" if m.is_default and role == "loaded" else "")
        quant = "" if m.spec.quantization == "none" else f", {m.spec.quantization}"
        click.echo(f"{role}: {m.spec.name} [{m.spec.kind}{quant}]")
        click.echo(f"  sha256  {m.sha256}")
        click.echo(f"  path    {m.path}")
        identity = f" (identity: {', '.join(m.spec.identity_labels)})" if m.spec.identity_labels else ""
        click.echo(f"  labels  {', '.join(lb for lb in m.spec.labels if lb not in m.spec.identity_labels)}{identity}")


@models.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="labels.json plus the hashes, as JSON.")
def show(path: Path | None, as_json: bool) -> None:
    """Validate a model directory (default: the configured one) and print its contract and hashes."""
    m = _load(path or _configured())
    info = {"path": str(m.path), "sha256": m.sha256, "files": m.files, **m.spec.model_dump()}
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{m.spec.name} ({'bundled default' if m.is_default else m.path})", show_header=False)
    for key in ("sha256", "kind", "labels", "primary", "identity_labels", "apply", "max_length", "quantization",
                "detects"):  # fmt: skip
        value = info[key]
        table.add_row(key, ", ".join(value) if isinstance(value, list) else str(value))
    for name, digest in m.files.items():
        table.add_row(f"sha256 {name}", digest)
    console.print(table)


@models.command("export-detoxify")
@click.option("--checkpoint", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Local Detoxify .ckpt (a pickle: only files you trust).")  # fmt: skip
@click.option("--config-dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Local directory: config.json and tokenizer files of the checkpoint's architecture.")  # fmt: skip
@click.option("--int8", is_flag=True, help="Quantize (dynamic int8) after the fp32 parity check; report the drift.")
@click.option("--tolerance", default=1e-4, show_default=True, help="Largest fp32 |Δ probability| vs PyTorch.")
@click.option("--no-optimize", is_flag=True, help="Skip onnxruntime's transformer fusions.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def export_detoxify(checkpoint: Path, config_dir: Path, int8: bool, tolerance: float, no_optimize: bool, force: bool,
                    out: Path) -> None:  # fmt: skip
    """Export a Detoxify checkpoint to a model directory (needs the `export` extra; never uses a hub)."""
    from holistic.classifiers.model_dir import ModelError

    try:
        from holistic.classifiers.export_detoxify import export_detoxify as run_export
    except ImportError as exc:  # torch or transformers missing
        raise click.ClickException(f"{exc}: install the export extra: pip install 'holistic-eval[export]'") from exc
    try:
        report = run_export(checkpoint, config_dir, out, int8=int8, optimize=not no_optimize, tolerance=tolerance,
                            force=force, log=lambda s: click.echo(s, err=True))  # fmt: skip
    except ModelError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(
        f"wrote {out}: {report.architecture}, {len(report.labels)} labels ({len(report.identity_labels)} identity), "
        f"max_length {report.max_length}, sha256 {report.sha256}"
    )
