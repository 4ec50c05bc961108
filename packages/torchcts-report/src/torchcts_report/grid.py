"""The op by dtype grid of the HTML report, coloured by status.

A backend engineer scans this grid to see at once which ops fail in which dtypes.
Each cell shows the most severe status among the op's cases in that dtype, with the
full per-status count in its tooltip, so a mostly passing cell with one crash is red.
"""

from __future__ import annotations

from collections import Counter
from html import escape

from torchcts_schema import STATUS_MEANINGS, Status

from torchcts_report.summary import RecordSummary
from torchcts_report.tallies import NONE_LABEL
from torchcts_report.text import clean

SEVERITY: tuple[Status, ...] = (
    Status.CRASHED,
    Status.FAILED,
    Status.ERROR,
    Status.UNSUPPORTED,
    Status.SKIPPED,
    Status.NOT_RUN,
    Status.PASSED,
)
SHORT: dict[Status, str] = {
    Status.CRASHED: "C",
    Status.FAILED: "F",
    Status.ERROR: "E",
    Status.UNSUPPORTED: "U",
    Status.SKIPPED: "S",
    Status.NOT_RUN: "N",
    Status.PASSED: "P",
}
COLOURS: dict[Status, tuple[str, str]] = {  # background, text
    Status.CRASHED: ("#8e0000", "#ffffff"),
    Status.FAILED: ("#e53935", "#ffffff"),
    Status.ERROR: ("#fb8c00", "#000000"),
    Status.UNSUPPORTED: ("#8e24aa", "#ffffff"),
    Status.SKIPPED: ("#90a4ae", "#000000"),
    Status.NOT_RUN: ("#e0e0e0", "#000000"),
    Status.PASSED: ("#43a047", "#ffffff"),
}


def grid_css() -> str:
    """One CSS class per status, generated so the legend and cells always agree."""
    return "\n".join(
        f".s-{s.value}{{background:{bg};color:{fg}}}" for s, (bg, fg) in COLOURS.items()
    )


def render_grid(summary: RecordSummary) -> str:
    """The legend and the grid as an HTML fragment."""
    cells: dict[tuple[str, str], Counter[Status]] = {}
    hidden: set[str] = set()
    cleaned: dict[str, str] = {}  # a few hundred distinct ops and dtypes, cleaned once
    for cell, count in summary.cells.items():
        op = _cleaned(cleaned, cell.op) or NONE_LABEL
        if cell.outside_selection:
            hidden.add(op)  # outside what this run asked for
            continue
        key = (op, _cleaned(cleaned, cell.dtype or NONE_LABEL))
        statuses = cells.get(key)
        if statuses is None:
            statuses = cells[key] = Counter()
        statuses[cell.status] += count
    ops = sorted({op for op, _ in cells})
    hidden -= set(ops)
    dtypes = sorted({dt for _, dt in cells}, key=lambda d: (d == NONE_LABEL, d))
    parts = ['<section class="grid">', "<h2>Op by dtype</h2>", _legend()]
    if hidden:
        parts.append(
            f"<p>{len(hidden)} op(s) whose cases this run's own selection (filters, "
            "level, sample limit) left out entirely are not shown, nor are such cases "
            "in the cells; the count tables include them.</p>"
        )
    if not cells:
        parts += ["<p>No cases.</p>", "</section>"]
        return "\n".join(parts)
    head = "".join(f"<th>{escape(dt)}</th>" for dt in dtypes)
    parts.append(
        '<div class="scroll"><table class="grid"><thead><tr><th>op</th>'
        f"{head}</tr></thead><tbody>"
    )
    for op in ops:
        row = [f"<tr><th>{escape(op)}</th>"]
        for dt in dtypes:
            counter = cells.get((op, dt))
            row.append(_cell(counter) if counter else '<td class="empty"></td>')
        row.append("</tr>")
        parts.append("".join(row))
    parts += ["</tbody></table></div>", "</section>"]
    return "\n".join(parts)


def _cleaned(cache: dict[str, str], value: str) -> str:
    done = cache.get(value)
    if done is None:
        done = cache[value] = clean(value)
    return done


def _cell(counter: Counter[Status]) -> str:
    worst = next(s for s in SEVERITY if counter.get(s))
    title = ", ".join(f"{s.value} {counter[s]}" for s in SEVERITY if counter.get(s))
    return (
        f'<td class="s-{worst.value}" title="{escape(title)}">'
        f"{SHORT[worst]}{sum(counter.values())}</td>"
    )


def _legend() -> str:
    items = "".join(
        f'<li><span class="swatch s-{s.value}">{SHORT[s]}</span> '
        f"<code>{s.value}</code>: {escape(STATUS_MEANINGS[s])}</li>"
        for s in SEVERITY
    )
    return (
        "<p>Each cell shows the most severe status among the op's cases in that dtype "
        "and how many cases it holds; hover for the count per status. An empty cell "
        "means the run has no case for that pair.</p>"
        f'<ul class="legend">{items}</ul>'
    )
