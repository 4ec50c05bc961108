"""The HTML report: markdown rendered by markdown-it-py plus the coloured grid."""

from __future__ import annotations

import re

from torchcts_report import load_input, render_html
from torchcts_schema import Status


def _html(tmp_path, syn, artifact=None):  # type: ignore[no-untyped-def]
    syn.write(tmp_path, artifact or syn.artifact())
    return render_html(load_input(tmp_path))


def test_scorecard_sections_become_html(tmp_path, syn):
    """The markdown sections render as HTML headings and tables."""
    html = _html(tmp_path, syn)
    for title in (
        "Status counts",
        "Next fix",
        "Failure clusters",
        "Crash records",
        "Diagnostic probes",
        "Counts by dtype",
        "Not run, by reason",
    ):
        assert f"<h2>{title}</h2>" in html
    assert "<table>" in html
    assert html.startswith("<!DOCTYPE html>")


def test_grid_has_op_rows_dtype_columns_and_worst_status(tmp_path, syn):
    """Each op x dtype cell is coloured by its most severe status, counts in a tooltip."""
    recs = [
        syn.record("add", "float32"),
        syn.record("add", "float32", Status.CRASHED, sample=1),
        syn.record("add", "float16"),
        syn.record("mul", "float16", Status.FAILED, mismatch="x"),
    ]
    html = _html(tmp_path, syn, syn.artifact(recs))
    grid = html[html.index('<table class="grid">') :]
    assert re.search(r"<th>op</th><th>float16</th><th>float32</th>", grid)
    assert '<td class="s-crashed" title="crashed 1, passed 1">C2</td>' in grid
    assert '<tr><th>mul</th><td class="s-failed" title="failed 1">F1</td>' in grid
    assert '<td class="empty"></td>' in grid  # mul has no float32 case


def test_grid_sits_after_status_counts(tmp_path, syn):
    """The grid follows the status table so the overview comes first."""
    html = _html(tmp_path, syn)
    assert html.index("<h2>Status counts</h2>") < html.index("<h2>Op by dtype</h2>")
    assert html.index("<h2>Op by dtype</h2>") < html.index("<h2>Diagnostic probes</h2>")


def test_legend_explains_every_status_colour(tmp_path, syn):
    """The legend shows one swatch per status with its meaning, and CSS for each."""
    html = _html(tmp_path, syn)
    for status in Status:
        assert f'class="swatch s-{status.value}"' in html
        assert f".s-{status.value}{{background:" in html


def test_empty_run_grid_says_no_cases(tmp_path, syn):
    """An empty run's grid says there are no cases."""
    assert "<p>No cases.</p>" in _html(tmp_path, syn, syn.artifact([]))


def test_partial_banner_in_html(tmp_path, syn):
    """The partial-run warning reaches the HTML as a blockquote at the top."""
    html = _html(tmp_path, syn, syn.artifact(completed_normally=False))
    assert "<blockquote>" in html
    assert html.index("Partial run") < html.index("<h2>Run</h2>")


def test_grid_leaves_out_ops_the_run_filtered_out(tmp_path, syn):
    """Ops whose cases were all left out by the run's own filters are only counted."""
    from torchcts_schema import NotRunReason

    recs = [
        syn.record("add"),
        syn.record(
            "zeta",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
        ),
        syn.record(
            "div",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
        ),
    ]
    html = _html(tmp_path, syn, syn.artifact(recs))
    grid = html[html.index("<h2>Op by dtype</h2>") :]
    assert "<tr><th>zeta</th>" not in grid
    assert "<tr><th>div</th>" in grid
    assert (
        "1 op(s) whose cases this run's own selection (filters, level, sample" in grid
    )
