"""Every scorecard section rendered from a synthetic artifact: run header, counts,
breakdowns, failure clusters, next fixes and the support surface
(`test_scorecard_evidence.py`: probes, crashes, diagnostics and reference problems)."""

from __future__ import annotations

import pytest
from report_factories import render_scorecard as _render
from report_factories import section as _section
from torchcts_schema import ArtifactError, NextFix, Status


def test_header_names_every_run_field(tmp_path, syn):
    """The header carries backend, hardware key, versions, command, duration, status."""
    text = _section(_render(tmp_path, syn), "Run")
    for expected in (
        "torchcts\\_simdev",
        "`x86-64-2cpu`",
        "| PyTorch | 2.13.0 |",
        "| TorchCTS | 0.1.0 |",
        "`torchcts-run --manifest manifests/simdev.py -n 2`",
        "| duration | 2m 03s |",
        "| completed normally | yes |",
        "`sha256:abc123`",
    ):
        assert expected in text, expected


def test_duration_unknown_without_end_time(tmp_path, syn):
    """A run without an end time says its duration is unknown instead of guessing."""
    art = syn.artifact(ended_at=None, completed_normally=False)
    assert "unknown (no end time recorded)" in _render(tmp_path, syn, art)


def test_partial_run_says_so_at_the_top(tmp_path, syn):
    """A run that did not complete normally is flagged before any other section."""
    art = syn.artifact(completed_normally=False)
    text = _render(tmp_path, syn, art)
    banner = text.index("Partial run: this run did not complete normally")
    assert banner < text.index("## Run")
    assert "15 case record(s)" in text
    assert "| completed normally | **no** |" in text


def test_complete_run_has_no_partial_banner(tmp_path, syn):
    """A completed run is not flagged as partial."""
    assert "Partial run" not in _render(tmp_path, syn)


def test_status_counts_cover_all_seven_statuses(tmp_path, syn):
    """The status table lists all seven statuses with exact counts and a total."""
    text = _section(_render(tmp_path, syn), "Status counts")
    expected = {
        "passed": 5,
        "failed": 3,
        "error": 1,
        "unsupported": 1,
        "not_run": 2,
        "skipped": 1,
        "crashed": 2,
    }
    for status, count in expected.items():
        assert f"| `{status}` | {count} |" in text
    assert "| **total** | 15 |" in text


def test_breakdowns_by_source_capability_dtype_level(tmp_path, syn):
    """Per-source, per-capability, per-dtype and per-level tables count every status."""
    text = _render(tmp_path, syn)
    head = "| passed | failed | error | unsupported | not_run | skipped | crashed | total |"
    source = _section(text, "Counts by expected-result source")
    assert head.replace("|", "| source |", 1) in source
    assert "| `cpu_reference` | 2 | 3 | 1 | 1 | 0 | 1 | 1 | 9 |" in source
    assert "| `(none)` | 0 | 0 | 0 | 0 | 2 | 0 | 1 | 3 |" in source
    capability = _section(text, "Counts by capability")
    assert "| `views` | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 1 |" in capability
    assert "| `backward` | 0 | 0 | 0 | 0 | 1 | 0 | 0 | 1 |" in capability
    dtype = _section(text, "Counts by dtype")
    assert "| `float32` | 2 | 2 | 1 | 1 | 1 | 0 | 2 | 9 |" in dtype
    assert dtype.index("`int64`") < dtype.index("`(none)`")
    level = _section(text, "Counts by semantic level")
    assert level.index("| `3` |") < level.index("| `5` |")


def test_capability_prefers_the_recorded_one(tmp_path, syn):
    """A capability the runner recorded in extra wins over the one derived from the id."""
    rec = syn.record("add", "float32", extra={"capability": "noncontiguous"})
    text = _render(tmp_path, syn, syn.artifact([rec]))
    assert "| `noncontiguous` |" in _section(text, "Counts by capability")


def test_levels_sort_numerically(tmp_path, syn):
    """Level 10 sorts after level 2, not before it."""
    recs = [syn.record("a", level=10), syn.record("b", level=2)]
    level = _section(
        _render(tmp_path, syn, syn.artifact(recs)), "Counts by semantic level"
    )
    assert level.index("| `2` |") < level.index("| `10` |")


def test_not_run_counts_by_reason(tmp_path, syn):
    """Not-run cases are counted per reason, with the reason's meaning."""
    text = _section(_render(tmp_path, syn), "Not run, by reason")
    assert (
        "| `dtype_not_supported` | 1 | the manifest does not declare this dtype" in text
    )
    assert "| `capability_not_declared` | 1 |" in text


def test_failure_clusters_largest_first_with_rerun(tmp_path, syn):
    """Clusters are listed largest first, each with an example and its rerun command."""
    text = _section(_render(tmp_path, syn), "Failure clusters")
    first = text.splitlines()[6]
    assert first.startswith("| 1 | 2 | `failed` | `mul` | `float32` |")
    # grouped by the normalised signature, shown with the example's own numbers
    assert "mismatch: values differ at 3 of 12 elements (max abs diff 0.5)" in first
    assert "`opinfo/mul/forward/float32/0`" in first
    assert (
        "`torchcts-run --manifest 'manifests/simdev.py' "
        "'torchcts::opinfo/mul/forward/float32/0'`" in first
    )
    assert "`nn.functional.conv`" in text


def test_cluster_list_says_when_cut(tmp_path, syn):
    """More clusters than the table shows are counted, never silently dropped."""
    recs = [
        syn.record(f"op{i}", "float32", Status.FAILED, mismatch="bad")
        for i in range(105)
    ]
    text = _section(_render(tmp_path, syn, syn.artifact(recs)), "Failure clusters")
    assert "5 smaller cluster(s) with 5 case(s) are not listed" in text


def test_no_failures_says_so(tmp_path, syn):
    """A clean run says it has no failing cases and no crashes."""
    text = _render(tmp_path, syn, syn.artifact([syn.record()]))
    assert "No failing cases." in text
    assert "No case crashed." in text
    assert "Every selected case was executed." in text


def test_next_fix_in_seed_order_with_counts(tmp_path, syn):
    """The next-fix section follows the seed's order with a count per category."""
    text = _section(_render(tmp_path, syn), "Next fix")
    titles = [line for line in text.splitlines() if line.startswith("### ")]
    assert titles == [
        "### 1. configuration: 0 case(s)",
        "### 2. correctness: 4 case(s)",
        "### 3. implement or declare: 1 case(s)",
        "### 4. crash evidence: 2 case(s)",
        "### 5. support surface: 2 case(s)",
        "### 6. missing evidence: 1 case(s)",
    ]


def test_next_fix_actions_name_cases_and_commands(tmp_path, syn):
    """Each category lists concrete actions with an example case and rerun command."""
    text = _section(_render(tmp_path, syn), "Next fix")
    assert "- Inspect mul in float32, 2 case(s): mismatch" in text
    assert (
        "Implement nn.functional.conv for float32 or remove it from the manifest"
        in text
    )
    assert "Rerun cumsum in float32 in isolation" in text
    assert "capability\\_not\\_declared" in text
    support = text[text.index("5. support surface") : text.index("6. missing")]
    assert "Rerun:" not in support  # not_run cases need a manifest change, not a rerun


def test_next_fix_respects_recorded_category(tmp_path, syn):
    """A record's own next_fix (a harness problem) puts it under configuration."""
    rec = syn.record(
        "add",
        status=Status.ERROR,
        exception_type="ImportError",
        exception_message="no module simdev",
        next_fix=NextFix.CONFIGURATION,
    )
    text = _section(_render(tmp_path, syn, syn.artifact([rec])), "Next fix")
    assert "### 1. configuration: 1 case(s)" in text
    assert "Check the setup behind add (float32), 1 case(s): ImportError" in text


def test_metadata_counts_that_disagree_are_refused(tmp_path, syn):
    """A canonical result whose metadata counts differ from its records is refused
    with one line naming the counts (a flipped status cannot pass as a note)."""
    art = syn.artifact([syn.record()], counts={"passed": 5, "failed": 0})
    with pytest.raises(ArtifactError, match=r"metadata counts disagree.*passed 5 vs 1"):
        _render(tmp_path, syn, art)


def test_metadata_counts_that_agree_are_quiet(tmp_path, syn):
    """Matching metadata counts (zeros included) add no note."""
    art = syn.artifact([syn.record()], counts={"passed": 1, "failed": 0})
    assert "states other counts" not in _render(tmp_path, syn, art)


def test_repeated_case_ids_are_refused(tmp_path, syn):
    """A case id recorded twice is not counted twice: the loader refuses the file,
    naming the case."""
    art = syn.artifact([syn.record(), syn.record(status=Status.FAILED, mismatch="x")])
    with pytest.raises(ArtifactError, match="has more than one record"):
        _render(tmp_path, syn, art)


def test_support_surface_puts_manifest_decisions_before_filters(tmp_path, syn):
    """Cases the run's own filters left out rank after manifest decisions, with advice."""
    from torchcts_schema import NotRunReason

    recs = [
        syn.record(
            f"f{i}",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
        )
        for i in range(5)
    ] + [
        syn.record(
            "x",
            status=Status.NOT_RUN,
            source=None,
            not_run_reason=NotRunReason.OP_EXCLUDED,
        )
    ]
    text = _section(_render(tmp_path, syn, syn.artifact(recs)), "Next fix")
    excluded = text.index("Decide whether they belong in the backend's support surface")
    filtered = text.index("Left out by this run's own filters; run without them")
    assert excluded < filtered
    assert "5 case(s), filtered\\_by\\_selection" in text


def test_passes_through_a_cpu_fallback_are_counted_apart(tmp_path, syn):
    """Passes that ran through the CPU fallback are counted apart from native ones,
    with the overloads and the cases by name; a forbidden one is counted as such."""
    sin = ("aten::sin.out",)
    detail = "passed only through the device's CPU fallback, which the manifest forbids"
    recs = [
        syn.record("add"),
        syn.record("sin", cpu_fallback=sin),
        syn.record("sin", "float64", cpu_fallback=("aten::cos.out", *sin)),
        syn.record(
            "sin",
            "bfloat16",
            Status.FAILED,
            detail=detail,
            next_fix=NextFix.IMPLEMENT_OR_DECLARE,
            cpu_fallback=sin,
        ),
    ]
    text = _render(tmp_path, syn, syn.artifact(recs))
    status = _section(text, "Status counts")
    assert (
        "**2 of the 3 passed case(s) passed only through the device's CPU "
        "fallback**; 1 passed natively" in status
    )
    section = _section(text, "CPU fallback")
    assert "3 executed case(s) ran part of their work on the CPU" in section
    assert "**2 passed only through it**, counted apart from the 1 native" in section
    assert "1 failed because the manifest forbids the CPU fallback" in section
    assert "| `passed` | 2 |" in section and "| `failed` | 1 |" in section
    assert "| `aten::sin.out` | 3 | 2 |" in section
    assert "| `aten::cos.out` | 1 | 1 |" in section
    assert "- `opinfo/sin/forward/float32/0`: `aten::sin.out`" in section
    assert "opinfo/sin/forward/bfloat16/0" not in section.split("Cases that")[1]
    assert "Implement sin for bfloat16" in _section(text, "Next fix")


def test_a_run_without_cpu_fallback_has_no_such_section(tmp_path, syn):
    """Nothing fell back: no section, no note under the status counts."""
    text = _render(tmp_path, syn)
    assert "## CPU fallback" not in text and "CPU fallback" not in text
