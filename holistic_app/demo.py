"""`holistic up --demo`: stream the bundled sample through the running stack, print the profiles."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from holistic_client import Client, terminal
from holistic_client.demo_sample import SAMPLE, rebased
from holistic_client.display import detail_tables, family_table, profiles_table, trust_table
from holistic_client.jsonl import Line
from holistic_client.segments import segments_section

SUMMARIZATION_COLUMNS = (
    "rouge_2", "rouge_l", "bleu", "chrf", "coverage", "density", "compression",
    "semantic_similarity_reference", "semantic_similarity_source",
)  # fmt: skip
RETRIEVAL_COLUMNS = ("RR@10", "Success@1", "Success@10", "Recall@10", "queries_pending_judgments")
# the demo's HOLISTIC_SEGMENT_KEYS (`holistic up --demo` sets it unless the environment does): every row of the
# sample carries metadata app_version (tools/make_demo_data.py), so each family's main metric per version shows
SEGMENT_KEYS = "app_version"
__all__ = ["SAMPLE", "rebased", "run", "wait_applied"]  # SAMPLE, rebased: the demo submitted as of now


def wait_applied(client: Client, models: list[str], timeout_s: float = 180.0) -> None:
    """Until every family has applied every accepted prediction of every model: nothing pending (a family's
    count can stay below the model's accepted predictions, e.g. evaluation-only batches go to one family)."""
    try:
        client.wait_applied(models, timeout_s)
    except TimeoutError as exc:
        raise TimeoutError(f"metric services did not catch up within {timeout_s:g} s ({exc})") from None


def run(address: str, sample: Path = SAMPLE, batch_size: int = 500, console: Console | None = None) -> None:
    console = console or terminal.console()
    lines, _ = rebased(sample, time.time())
    models = sorted({ln.prediction.model for ln in lines if ln.prediction is not None})
    predictions, of_models = terminal.count(len(lines), "prediction"), terminal.count(len(models), "model")
    console.print(f"streaming {predictions} of {of_models} from {sample.name} to {address}")
    started = time.monotonic()
    with Client(address) as client:
        with Progress(TextColumn("[bold]submitting"), BarColumn(), MofNCompleteColumn(), console=console,
                      transient=True) as progress:  # fmt: skip
            task = progress.add_task("submit", total=len(lines))
            report = client.submit_lines(
                _iter(lines), batch_size=batch_size, on_batch=lambda n: progress.advance(task, n)
            )
        submitted = time.monotonic() - started
        wait_applied(client, models)
        elapsed = time.monotonic() - started
        console.print(
            f"accepted {report.accepted:,} (+{report.duplicates:,} duplicates)"
            f" in {terminal.count(report.batches, 'batch')}; "
            f"submitted in {submitted:.2f} s, all families applied in {elapsed:.2f} s "
            f"({(report.accepted + report.duplicates) / elapsed:,.0f} predictions/s end to end)"
        )
        if report.rejected:
            console.print(f"[red]{len(report.rejected)} lines rejected[/red]: {report.rejected[:3]}")
        profiles = [client.get_profile(m) for m in models]
        console.print(profiles_table(profiles, title="holistic profiles, all time"))
        console.print(trust_table(profiles))
        console.print(profiles_table([client.get_profile(m, "1h") for m in models], title="last hour"))
        for table in detail_tables(profiles[0])[1:2]:
            console.print(table)
        for family, columns in (("summarization", SUMMARIZATION_COLUMNS), ("retrieval", RETRIEVAL_COLUMNS)):
            table = family_table(profiles, family, columns)
            if table is not None:
                console.print(table)
        if profiles[0].segments:  # HOLISTIC_SEGMENT_KEYS (the demo's default: SEGMENT_KEYS)
            console.print(f"segments of {profiles[0].model}, all time (holistic profile MODEL --section segments):")
            for table in segments_section(profiles[0]):
                console.print(table)


def _iter(lines: list[Line]) -> Iterator[Line]:
    yield from lines
