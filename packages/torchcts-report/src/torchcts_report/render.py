"""Writing the three report files of one run next to its artifact."""

from __future__ import annotations

import os
from pathlib import Path

from torchcts_schema import (
    HTML_SUFFIX,
    JUNIT_SUFFIX,
    MARKDOWN_SUFFIX,
    ResultsLayout,
    gc_paused,
    write_atomic,
)

from torchcts_report.html_report import render_html
from torchcts_report.inputs import ReportInput, load_input, results_dir_of
from torchcts_report.junit import render_junit
from torchcts_report.scorecard import render_markdown
from torchcts_report.summary import summarise


def render_reports(
    report: ReportInput, out_dir: Path, *, junit_all: bool = False
) -> list[Path]:
    """Write ``<key>.md``, ``<key>.html`` and ``<key>.junit.xml``; return their paths.

    No cyclic collection while they are built: at level 4 the JUnit tree alone is
    100,000 elements, none in a cycle, and the collections their allocation set
    off scanned the loaded records again and again (a fifth of the render's CPU).
    """
    layout = ResultsLayout(out_dir, report.run_key)
    with gc_paused():
        summary = summarise(report.artifact.records)  # one pass, for md and html
        outputs = [
            (layout.report(MARKDOWN_SUFFIX), render_markdown(report, summary)),
            (layout.report(HTML_SUFFIX), render_html(report, summary)),
            (layout.report(JUNIT_SUFFIX), render_junit(report, list_all=junit_all)),
        ]
    mode = _shared_mode()
    for path, text in outputs:
        write_atomic(path, text)
        # the atomic temp file is private (0600); a report is meant to be read by others
        path.chmod(mode)
    return [path for path, _ in outputs]


def _shared_mode() -> int:
    """0644 under the usual umask: what a plain ``open(path, "w")`` would give."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def render_path(
    path: Path,
    *,
    run_key: str | None = None,
    out_dir: Path | None = None,
    junit_all: bool = False,
) -> list[Path]:
    """Load what `path` designates and write its reports (beside it by default)."""
    with gc_paused():  # what is loaded holds no cycles (see `render_reports`)
        report = load_input(path, run_key=run_key)
    target = path if path.is_dir() else results_dir_of(path)
    return render_reports(report, out_dir or target, junit_all=junit_all)
