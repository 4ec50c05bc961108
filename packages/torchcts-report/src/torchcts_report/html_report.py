"""The HTML report: the markdown scorecard rendered by markdown-it-py plus the grid.

The next fix and the status counts are on the first screen; the grid's cells link
to the clusters and crash records below, which carry stable ids (`anchors`). One
self-contained file that works offline: inline CSS, no scripts, no external
references, and a content security policy that forbids loading anything. Raw HTML in
the markdown is disabled, so text from an artifact can only ever be text.
"""

from __future__ import annotations

from html import escape

from markdown_it import MarkdownIt

from torchcts_report.anchors import (
    cell_links,
    cluster_anchor,
    set_heading_ids,
    set_row_ids,
)
from torchcts_report.clusters import build_clusters
from torchcts_report.grid import grid_css, render_grid
from torchcts_report.inputs import ReportInput
from torchcts_report.scorecard import MAX_CLUSTERS, markdown_sections
from torchcts_report.summary import RecordSummary, summarise

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1a1a1a}
main{max-width:1200px;margin:0 auto;padding:1rem 2rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;word-break:break-all}
pre{background:#f5f5f5;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
blockquote{border-left:4px solid #e53935;background:#fff3f3;margin:0;padding:.5rem 1rem}
.scroll{overflow:auto;max-height:80vh}
table.grid td{text-align:center;font-size:.8em;min-width:2.5em}
table.grid td.empty{background:#fff}
table.grid td a{color:inherit;display:block;text-decoration:none}
table.grid td a:hover{text-decoration:underline}
details>summary{cursor:pointer;margin:.5rem 0}
tr:target,h3:target{outline:3px solid #1565c0}
table.grid th{position:sticky;left:0;background:#fafafa;font-weight:normal}
table.grid thead th{top:0}
.legend{list-style:none;padding:0}
.swatch{display:inline-block;min-width:1.5em;text-align:center;border-radius:3px}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def render_html(report: ReportInput, summary: RecordSummary | None = None) -> str:
    """The whole HTML document as text.

    `summary` is `summarise(report.artifact.records)`, when the caller already has it.
    """
    if summary is None:
        summary = summarise(report.artifact.records)
    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False})
    renderer.enable("table")
    clusters = build_clusters(summary.executed)
    listed = clusters[:MAX_CLUSTERS]
    crash_details = {str(e.get("case_id")) for e in report.crash_evidence}
    links = cell_links(summary, clusters, len(listed), crash_details)
    body = []
    used: set[str] = {"op-by-dtype"}
    env: dict[str, object] = {}
    # the next fix and the status counts come first; the grid follows the run's
    # header and probes, before the clusters its cells link to
    for name, text in markdown_sections(report, summary):
        tokens = renderer.parse(text, env)
        set_heading_ids(tokens, used)
        if name == "clusters":
            set_row_ids(tokens, [cluster_anchor(c) for c in listed])
        body.append(renderer.renderer.render(tokens, renderer.options, env))
        if name == "probes":
            body.append(render_grid(summary, links))
    title = escape(f"TorchCTS scorecard: {report.run_key}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n"
        f"<style>{_CSS}{grid_css()}\n</style>\n</head>\n<body>\n<main>\n"
        + "".join(body)
        + "</main>\n</body>\n</html>\n"
    )
