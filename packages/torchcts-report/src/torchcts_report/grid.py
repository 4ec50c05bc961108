"""The op by dtype grid of the HTML report, coloured by status.

A backend engineer scans this grid to see at once which ops fail in which dtypes.
Each cell shows the most severe status among the op's cases in that dtype, with the
full per-status count in its tooltip, so a mostly passing cell with one crash is red.
Rows are ordered by trouble (ops with the most crashed, failed, error or unsupported
cases first, then ops that pass, then the rest, by name with leading underscores
ignored so dunder ops do not lead by accident); ops whose every case was not run are
folded away behind a count. Every cell that did not pass links to its explanation.
"""

from __future__ import annotations

from collections import Counter
from html import escape

from torchcts_schema import STATUS_MEANINGS, Status

from torchcts_report.anchors import CLUSTERS_SECTION, SECTION_OF
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


TROUBLE = frozenset({Status.CRASHED, Status.FAILED, Status.ERROR, Status.UNSUPPORTED})


def render_grid(
    summary: RecordSummary, links: dict[tuple[str, str], str] | None = None
) -> str:
    """The legend and the grid as an HTML fragment.

    `links` maps (op, dtype) of cells with failing cases to the anchor of their
    cluster or case (see `anchors.cell_links`); other cells link to their section.
    """
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
    rows: dict[str, Counter[Status]] = {}
    for (op, _), counter in cells.items():
        rows.setdefault(op, Counter()).update(counter)
    hidden -= set(rows)
    dtypes = sorted({dt for _, dt in cells}, key=lambda d: (d == NONE_LABEL, d))
    parts = ['<section class="grid" id="op-by-dtype">', "<h2>Op by dtype</h2>"]
    parts.append(_legend())
    if hidden:
        parts.append(
            f"<p>{len(hidden)} op(s) whose cases this run's own selection (filters, "
            "level, sample limit) left out entirely are not shown, nor are such cases "
            "in the cells; the count tables include them.</p>"
        )
    if not cells:
        parts += ["<p>No cases.</p>", "</section>"]
        return "\n".join(parts)
    shown = sorted(
        (op for op, c in rows.items() if set(c) != {Status.NOT_RUN}),
        key=lambda op: _trouble_order(op, rows[op]),
    )
    folded = sorted((op for op in rows if op not in set(shown)), key=_name_order)
    table = _Table(dtypes, cells, links or {})
    if shown:
        parts.append(table.render(shown))
    if folded:
        parts += [
            "<details>",
            f"<summary>{len(folded)} op(s) whose cases were all not run "
            "(see Not run, by reason)</summary>",
            table.render(folded),
            "</details>",
        ]
    parts.append("</section>")
    return "\n".join(parts)


def _name_order(op: str) -> tuple[str, str]:
    return (op.lstrip("_"), op)


def _trouble_order(op: str, counter: Counter[Status]) -> tuple[int, int, str, str]:
    trouble = sum(n for s, n in counter.items() if s in TROUBLE)
    group = 0 if trouble else (1 if counter.get(Status.PASSED) else 2)
    return (group, -trouble, *_name_order(op))


class _Table:
    """The grid's table for a list of ops, with the columns every part shares."""

    def __init__(
        self,
        dtypes: list[str],
        cells: dict[tuple[str, str], Counter[Status]],
        links: dict[tuple[str, str], str],
    ) -> None:
        self.dtypes, self.cells, self.links = dtypes, cells, links

    def render(self, ops: list[str]) -> str:
        """The table of `ops`, in the order given."""
        head = "".join(f"<th>{escape(dt)}</th>" for dt in self.dtypes)
        lines = [
            '<div class="scroll"><table class="grid"><thead><tr><th>op</th>'
            f"{head}</tr></thead><tbody>"
        ]
        for op in ops:
            row = [f"<tr><th>{escape(op)}</th>"]
            for dt in self.dtypes:
                counter = self.cells.get((op, dt))
                if counter:
                    row.append(_cell(counter, self.links.get((op, dt))))
                else:
                    row.append('<td class="empty"></td>')
            row.append("</tr>")
            lines.append("".join(row))
        lines.append("</tbody></table></div>")
        return "\n".join(lines)


def _cleaned(cache: dict[str, str], value: str) -> str:
    done = cache.get(value)
    if done is None:
        done = cache[value] = clean(value)
    return done


def _cell(counter: Counter[Status], link: str | None) -> str:
    worst = next(s for s in SEVERITY if counter.get(s))
    title = ", ".join(f"{s.value} {counter[s]}" for s in SEVERITY if counter.get(s))
    label = f"{SHORT[worst]}{sum(counter.values())}"
    if worst is not Status.PASSED:
        target = SECTION_OF.get(worst) or link or CLUSTERS_SECTION
        label = f'<a href="#{escape(target)}">{label}</a>'
    return f'<td class="s-{worst.value}" title="{escape(title)}">{label}</td>'


def _legend() -> str:
    items = "".join(
        f'<li><span class="swatch s-{s.value}">{SHORT[s]}</span> '
        f"<code>{s.value}</code>: {escape(STATUS_MEANINGS[s])}</li>"
        for s in SEVERITY
    )
    return (
        "<p>Each cell shows the most severe status among the op's cases in that dtype "
        "and how many cases it holds; hover for the count per status, follow a cell "
        "that did not pass to its failure cluster, crash record or section. Ops "
        "with the most trouble come first. An empty cell means the run has no case "
        "for that pair.</p>"
        f'<ul class="legend">{items}</ul>'
    )
