"""Reports are deterministic: the same artifact always gives the same bytes."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torchcts_report import load_input, render_path
from torchcts_report.html_report import render_html
from torchcts_report.inputs import ReportInput
from torchcts_report.junit import render_junit
from torchcts_report.scorecard import render_markdown
from torchcts_schema import RunArtifact


def test_rendering_twice_gives_identical_files(tmp_path, syn):
    """Two renders of one results dir write byte-identical md, html and junit."""
    syn.write(tmp_path, syn.artifact())
    first = {p.name: p.read_bytes() for p in render_path(tmp_path)}
    second = {p.name: p.read_bytes() for p in render_path(tmp_path)}
    assert first == second
    assert sorted(first) == [
        "simdev_x86-64-2cpu.html",
        "simdev_x86-64-2cpu.junit.xml",
        "simdev_x86-64-2cpu.md",
    ]


def test_reports_hold_no_render_time(tmp_path, syn):
    """Nothing in a report depends on when it was rendered."""
    syn.write(tmp_path, syn.artifact())
    for path in render_path(tmp_path):
        text = path.read_text()
        assert "2026-11-30T01:00:00" in text or path.suffix != ".md"
        assert str(tmp_path) not in text


# the fixture is a stateless class, so sharing it across examples is safe
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_record_order_does_not_matter(syn, seed):
    """Shuffling the artifact's records changes no byte of any report."""
    records = syn.mixed()
    shuffled = list(records)
    random.Random(seed).shuffle(shuffled)
    meta = syn.metadata()
    a = ReportInput(RunArtifact.from_records(meta, records), meta.run_key)
    b = ReportInput(RunArtifact.from_records(meta, shuffled), meta.run_key)
    for render in (render_markdown, render_html, render_junit):
        assert render(a) == render(b)


def test_loaded_and_in_memory_reports_agree(tmp_path, syn):
    """A report from the written artifact equals one from the in-memory artifact."""
    art = syn.artifact()
    syn.write(tmp_path, art)
    loaded = load_input(tmp_path)
    direct = ReportInput(art, art.metadata.run_key)
    assert render_markdown(loaded) == render_markdown(direct)
