"""`holistic report`: one self-contained HTML file of profiles for a model review or a compliance file.

Nothing is fetched when it is opened: the radar is inline SVG (the same chart as `holistic radar`),
the style is one inline <style>, and there is no script. The tables are the terminal's (display.py,
detail.py) turned into HTML, so the report, `holistic profile --detail` and the dashboard show the
same numbers from the same Profile fields.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from holistic.v1 import profile_pb2 as pp
from holistic_client.detail_panels import SECTIONS
from holistic_client.display import detail_tables, profiles_table
from holistic_client.empty_window import newest_text

STYLE = """
body { font: 14px/1.45 "DejaVu Sans", system-ui, sans-serif; color: #1f2937; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #e5e7eb; margin-top: 2em; } h3 { margin-bottom: 0.3em; }
.meta { color: #4b5563; } .meta dt { font-weight: bold; float: left; clear: left; width: 9em; }
.meta dd { margin-left: 9.5em; }
table { border-collapse: collapse; margin: 0.6em 0 0.2em; font-size: 13px; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 0.25em 0.6em; text-align: left; vertical-align: top;
         white-space: pre-wrap; }
th { background: #f3f4f6; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.plot, th.plot { font-family: "DejaVu Sans Mono", monospace; white-space: pre; font-weight: normal; }
p.note { color: #4b5563; margin: 0.1em 0 0.6em; white-space: pre-wrap; }
.panel { margin: 0.8em 0 1.4em; } #radar svg { max-width: 720px; height: auto; }
footer { margin-top: 3em; color: #6b7280; font-size: 12px; }
"""


def plain(markup: object) -> str:
    """A table cell or line as plain text (rich markup resolved, user text already escaped for it)."""
    if isinstance(markup, Text):
        return markup.plain
    return Text.from_markup(str(markup)).plain if markup is not None else ""


def is_plot(cell: str) -> bool:
    """A text plot's row or its scale (the reliability plot): set in the monospace font, so the scale
    above is exactly as wide as the rows below it (a proportional header was narrower)."""
    return "●" in cell or "│" in cell


def table_html(t: Table, table_id: str = "") -> str:
    cols = t.columns
    rows = [[plain(c) for c in col.cells] for col in cols]
    numeric = [col.justify == "right" for col in cols]
    attr = f' id="{html.escape(table_id)}"' if table_id else ""
    out = [f"<table{attr}>"]
    if t.title:
        out.append(f"<caption>{html.escape(plain(t.title))}</caption>")
    heads = [plain(c.header) for c in cols]
    out.append(
        "<thead><tr>"
        + "".join(
            f"<th{' class=num' if n else ' class=plot' if is_plot(head) else ''}>{html.escape(head)}</th>"
            for head, n in zip(heads, numeric, strict=True)
        )
        + "</tr></thead><tbody>"
    )
    for i in range(t.row_count):
        cells = []
        for j in range(len(cols)):
            value = rows[j][i] if i < len(rows[j]) else ""
            cls = "num" if numeric[j] else "plot" if is_plot(value) else ""
            cells.append(f"<td{f' class={cls}' if cls else ''}>{html.escape(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if t.caption:
        out.append(f'<p class="note">{html.escape(plain(t.caption))}</p>')
    return "".join(out)


def part_html(part: RenderableType) -> str:
    if isinstance(part, Table):
        return table_html(part)
    return f'<p class="note">{html.escape(plain(part))}</p>'


def radar_svg(profiles: Sequence[pp.Profile], title: str) -> str:
    """The radar as an inline <svg> element (no XML prolog, no DOCTYPE with its external DTD)."""
    from holistic_client.radar import render  # matplotlib: imported when drawn, not by every command

    svg = render(profiles, "svg", title=title).decode("utf-8")
    return svg[svg.index("<svg") :]


def window_text(p: pp.Profile, title: str) -> str:
    w = p.window
    if not w.HasField("range"):
        return title
    start, end = (datetime.fromtimestamp(t.seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
                  for t in (w.range.start_time, w.range.end_time))  # fmt: skip
    return f"{title}: {start} to {end}"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def build_report(profiles: Sequence[pp.Profile], window_title: str, made_at: datetime, source: str = "") -> str:
    """The whole report as one HTML document."""
    models = ", ".join(p.model for p in profiles)
    meta = [("models", models), ("window", window_text(profiles[0], window_title) if profiles else window_title),
            ("made", made_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")), ("source", source)]  # fmt: skip
    matrix = profiles_table(profiles, title="models × dimensions")
    body = [
        f"<h1>holistic report: {html.escape(models)}</h1>",
        '<dl class="meta">'
        + "".join(f'<dt>{k}</dt><dd id="meta-{k}">{html.escape(v)}</dd>' for k, v in meta if v)
        + "</dl>",
        f'<section id="radar"><h2>Radar</h2>{radar_svg(profiles, f"holistic profiles, {window_title}")}</section>',
        f'<section id="matrix-section"><h2>Matrix</h2>{table_html(matrix, "matrix")}</section>',
    ]
    for p in profiles:
        body.append(f'<section class="model" id="model-{slug(p.model)}" data-model="{html.escape(p.model)}">')
        body.append(f"<h2>{html.escape(p.model)}</h2>")
        where = "" if p.counts.window_predictions else f"; {newest_text(p, made_at.timestamp())}"
        waiting = "; ".join(f"{f.family} {f.pending_predictions:,}" for f in p.pending if f.pending_predictions)
        body.append(f'<p class="note">{p.counts.window_predictions:,} predictions in the window, '
                    f"{p.counts.accepted_predictions:,} accepted all time"
                    + (f"; pending (accepted, not yet applied): {html.escape(waiting)}" if waiting else "")
                    + f"{html.escape(where)}</p>")  # fmt: skip
        body.extend(part_html(t) for t in detail_tables(p))
        for name, section in SECTIONS.items():
            parts = "".join(part_html(x) for x in section(p))
            body.append(f'<div class="panel" id="{slug(p.model)}-{name}"><h3>{name}</h3>{parts}</div>')
        body.append("</section>")
    body.append(f"<footer>made by holistic report at {html.escape(meta[2][1])}; self-contained: nothing is "
                "fetched when this file is opened.</footer>")  # fmt: skip
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>holistic report: {html.escape(models)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
