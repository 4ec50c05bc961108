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
        assert re.search(f'<h2 id="[a-z0-9-]+">{re.escape(title)}</h2>', html)
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
    assert '<td class="s-crashed" title="crashed 1, passed 1"><a href="#' in grid
    assert '<tr><th>mul</th><td class="s-failed" title="failed 1"><a href="#' in grid
    assert '<td class="s-passed" title="passed 1">P1</td>' in grid  # no link
    assert '<td class="empty"></td>' in grid  # mul has no float32 case


def _at(html: str, title: str) -> int:
    return html.index(f">{title}</h2>")


def test_next_fix_and_counts_come_before_the_grid(tmp_path, syn):
    """Status counts, then the next fix, then run and probes; the grid after them."""
    html = _html(tmp_path, syn)
    order = ["Status counts", "Next fix", "Run", "Diagnostic probes", "Op by dtype"]
    positions = [_at(html, title) for title in order]
    assert positions == sorted(positions)
    assert _at(html, "Op by dtype") < _at(html, "Failure clusters")


def test_grid_rows_ordered_by_trouble(tmp_path, syn):
    """Most failing cases first, then passing ops by name (dunders not first)."""
    recs = [
        syn.record("__radd__", "float32"),
        syn.record("abs", "float32"),
        syn.record("mul", "float32", Status.FAILED, mismatch="x"),
        syn.record("sin", "float32", Status.FAILED, mismatch="x"),
        syn.record("sin", "float32", Status.ERROR, sample=1, exception_type="E"),
        syn.record("zeta", "float32", Status.SKIPPED, detail="needs two devices"),
    ]
    html = _html(tmp_path, syn, syn.artifact(recs))
    grid = html[html.index('<table class="grid">') :]
    body = grid[grid.index("<tbody>") : grid.index("</tbody>")]
    rows = re.findall(r"<tr><th>([^<]+)</th>", body)
    assert rows == ["sin", "mul", "abs", "__radd__", "zeta"]


def test_all_not_run_rows_fold_behind_a_count(tmp_path, syn):
    """Ops whose every case was not run sit in a closed <details> with their count."""
    from torchcts_schema import NotRunReason

    skip = {"status": Status.NOT_RUN, "source": None}
    recs = [
        syn.record("add"),
        syn.record("div", **skip, not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED),
        syn.record("erf", **skip, not_run_reason=NotRunReason.OP_EXCLUDED),
    ]
    html = _html(tmp_path, syn, syn.artifact(recs))
    grid = html[html.index(">Op by dtype</h2>") : html.index("</section>")]
    shown, folded = grid.split("<details>")
    assert "<tr><th>add</th>" in shown and "<th>div</th>" not in shown
    assert "<summary>2 op(s) whose cases were all not run" in folded
    assert "<tr><th>div</th>" in folded and "<tr><th>erf</th>" in folded
    assert "<script" not in html


def test_failing_cells_link_to_their_cluster_row(tmp_path, syn):
    """A failed cell's link names an id that a cluster row of that op carries."""
    recs = [syn.record("mul", "float32", Status.FAILED, mismatch="bad values")]
    html = _html(tmp_path, syn, syn.artifact(recs))
    (target,) = re.findall(r'title="failed 1"><a href="#([^"]+)"', html)
    assert target.startswith("cluster-")
    row = re.search(f'<tr id="{target}">(.*?)</tr>', html, re.S)
    assert row and "<code>mul</code>" in row.group(1)


def test_crashed_cell_links_to_its_crash_record(tmp_path, syn):
    """A crashed case with a crash record file links to that record's section."""
    import json

    from torchcts_schema import CrashInfo, CrashKind

    crash = CrashInfo(CrashKind.SIGNAL, signal="SIGSEGV", detail="segfault")
    art = syn.artifact([syn.record("exp", status=Status.CRASHED, crash=crash)])
    syn.write(tmp_path, art)
    crashes = tmp_path / f"{art.metadata.run_key}_crashes"
    crashes.mkdir()
    case_id = "opinfo/exp/forward/float32/0"
    (crashes / "exp.json").write_text(json.dumps({"case_id": case_id}))
    html = render_html(load_input(tmp_path))
    (target,) = re.findall(r'title="crashed 1"><a href="#([^"]+)"', html)
    assert target.startswith("case-opinfo-exp-forward-float32-0-")
    assert re.search(f'<h3 id="{target}">Crash of <code>{case_id}</code></h3>', html)


def test_every_link_has_a_target(tmp_path, syn):
    """Each in-page link of the mixed run points at an id the page defines."""
    html = _html(tmp_path, syn)
    targets = set(re.findall(r'href="#([^"]+)"', html))
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert targets and targets <= ids


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
    assert html.index("Partial run") < _at(html, "Status counts")


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
    grid = html[html.index(">Op by dtype</h2>") :]
    assert "<tr><th>zeta</th>" not in grid
    assert "<tr><th>div</th>" in grid
    assert (
        "1 op(s) whose cases this run's own selection (filters, level, sample" in grid
    )
