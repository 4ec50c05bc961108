"""The committed sample result sets (results/samples/): real simdev runs that re-render
byte for byte and show every scorecard section."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from torchcts_report import load_input, render_html, render_junit, render_markdown
from torchcts_report.inputs import ReportInput
from torchcts_schema import Status, run_keys

SAMPLES = Path(__file__).resolve().parents[3] / "results" / "samples"
NAMES = ("focused", "regression")
SECTIONS = (
    "## Run", "## Status counts", "## Diagnostic probes", "## Next fix",
    "## Failure clusters", "## Crash records", "## Reference diagnostics",
    "## Counts by expected-result source", "## Counts by capability",
    "## Counts by dtype", "## Counts by semantic level", "## Not run, by reason",
    "## Diagnostics",
)  # fmt: skip


@cache
def _load(name: str) -> ReportInput:
    # the regression sample holds ~8,000 records; load each once per test process
    return load_input(SAMPLES / name)


def test_both_sample_sets_exist():
    """The focused and the regression sample sets are committed, nothing else."""
    sets = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir() and run_keys(p))
    assert sets == list(NAMES)


RENDERERS = {".md": render_markdown, ".html": render_html, ".junit.xml": render_junit}


@pytest.mark.parametrize("suffix", list(RENDERERS))
@pytest.mark.parametrize("name", NAMES)
def test_sample_reports_rerender_identically(name, suffix):
    """Rendering a sample's artifact again gives exactly the committed report file."""
    report = _load(name)
    committed = (SAMPLES / name / f"{report.run_key}{suffix}").read_bytes()
    rendered = RENDERERS[suffix](report).encode("utf-8")
    assert rendered == committed, f"{name}{suffix} is stale"


@pytest.mark.parametrize("name", NAMES)
def test_sample_is_a_complete_real_simdev_run(name):
    """Each sample is a completed simdev run whose scorecard has every section."""
    report = _load(name)
    meta = report.artifact.metadata
    assert meta.device == "simdev" and meta.completed_normally
    assert meta.options.get("backend_options") == {"fault_profile": "demo"}
    statuses = {r.status for r in report.artifact.records}
    assert {Status.PASSED, Status.FAILED, Status.CRASHED} <= statuses
    # the full run records its level's declines; the filtered one counts what it
    # left out (both show up under "Not run, by reason")
    assert (Status.NOT_RUN in statuses) is (name == "regression")
    assert sum(meta.outside.values()) > 400_000
    text = render_markdown(report)
    for section in SECTIONS:
        assert section in text
    assert "Partial run" not in text
    assert report.unreadable == []


@pytest.mark.parametrize("name", NAMES)
def test_every_crash_has_its_record(name):
    """Each crashed case has a crash record file, and the scorecard shows each one."""
    report = _load(name)
    crashed = {r.case_id for r in report.artifact.records if r.status is Status.CRASHED}
    recorded = {str(e["case_id"]) for e in report.crash_evidence}
    assert crashed and crashed == recorded
    text = render_markdown(report)
    for case_id in crashed:
        assert f"### Crash of `{case_id}`" in text


def test_regression_sample_shows_every_executed_status():
    """The regression run holds passed, failed, error, unsupported and crashed cases."""
    statuses = {r.status for r in _load("regression").artifact.records}
    executed = {Status.PASSED, Status.FAILED, Status.ERROR, Status.UNSUPPORTED}
    assert executed | {Status.CRASHED} <= statuses


def test_samples_name_no_host():
    """No sample file holds an absolute home or checkout path."""
    checkout = str(SAMPLES.parents[1])
    for path in SAMPLES.rglob("*"):
        if path.is_file() and path.name != "README.md":
            text = path.read_text(encoding="utf-8", errors="replace")
            for needle in (checkout, "/home/", "/Users/", "/root/"):
                assert needle not in text, f"{path.name} contains {needle}"
