"""The scorecard's "Claimed vs discovered dtype support" section.

When the results directory holds a dtype discovery (`torchcts-cases discover`), the
scorecard shows, per dtype, what the probed manifest claims against what the probe
found, so a run's dtype claims are read next to the evidence that supports them. The
file comes through `discovery_support`, which checks it; one it cannot use is named
in one line instead of shown.
"""

from __future__ import annotations

from torchcts_schema import SELECTIONS_DIR

from torchcts_report.discovery_support import DtypeSupport, Support, read_discovery
from torchcts_report.inputs import ReportInput
from torchcts_report.text import md, md_code, table

TITLE = "Claimed vs discovered dtype support"
HEADERS = [
    "dtype",
    "claimed",
    "discovered",
    "ops probed",
    "work",
    "unsupported",
    "kept claimed",
]


def discovery_section(report: ReportInput) -> str:
    """Markdown for the results directory's discovery, or "" when it has none."""
    results_dir = report.results_dir
    if results_dir is None:
        return ""
    subset_run = results_dir.parent.name == SELECTIONS_DIR
    root = results_dir.parent.parent if subset_run else results_dir
    found = read_discovery(results_dir, root)
    if found is None:
        return ""
    head = f"## {TITLE}\n\n"
    if found.problem is not None:
        return head + (
            f"The discovery file {md_code(found.json_file)} is unreadable "
            f"({md(found.problem)}); no discovery is shown."
        )
    kind = "a probe of some ops" if found.subset else "a probe of every op"
    source = f"From {md_code(found.json_file)} ({kind})"
    if found.others:
        source += (
            f"; {found.others} more discovery file(s) not shown (the whole probe's "
            "comes first, then subset probes in path order: the files record no time)"
        )
    rows = [_row(r) for r in found.rows if r.has_evidence or r.claimed is not False]
    parts = [
        head + source + ". Claimed: the probed manifest's DTYPES; discovered: what "
        "the probe's evidence supports.",
        table(HEADERS, rows) if rows else "No dtype was probed or claimed.",
        _unclean_line(found.unclean_ops, found.unclean_cells, found.markdown_file),
    ]
    return "\n\n".join(parts)


def _row(r: DtypeSupport) -> list[str]:
    return [
        md_code(r.dtype),
        _support(r.claimed),
        _support(r.proposed) if r.probed else "not probed",
        str(r.ops_probed),
        str(r.works),
        str(r.unsupported),
        str(r.kept),
    ]


def _support(value: Support) -> str:
    return md_code(value if isinstance(value, str) else str(value))


def _unclean_line(ops: int, cells: int, page: str | None) -> str:
    where = (
        f"the discovery page {md_code(page)}"
        if page is not None
        else "the discovery page, which is missing"
    )
    if not ops:
        return f"Every probed op passed every sample in every probed dtype ({where})."
    return (
        f"{ops} op(s) are not clean, in {cells} (op, dtype) pair(s): each is listed "
        f"in {where}."
    )
