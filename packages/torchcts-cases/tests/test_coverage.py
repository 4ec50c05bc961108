"""The coverage audit: categories, files written, check --fail-on-unknown."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest
import torch
from torchcts_cases import coverage, coverage_exclusions, coverage_trace
from torchcts_cases.cli import main
from torchcts_cases.overload_family import family
from torchcts_cases.trace_store import StoredTrace

FAKE_TRACE = {
    "opinfo": {"aten::add.Tensor": ["add"], "aten::mul.Tensor": ["mul"]},
    "suites": {"aten::set_.source_Storage": ["views/x/check/-/-"]},
}


def _stored() -> StoredTrace:
    """FAKE_TRACE as a stored trace: two OpInfo groups and one hand case."""
    trace = StoredTrace(key={}, complete=True)
    trace.put("opinfo/add/forward/float32/0", ["aten::add.Tensor"])
    trace.put("opinfo/mul/forward/float32/1", ["aten::mul.Tensor"])
    trace.put("views/x/check/-/-", ["aten::set_.source_Storage"])
    trace.declare("opinfo/add/forward/float32/0", ["aten::add"])
    trace.declare("opinfo/mul/forward/float32/1", ["aten::mul"])
    return trace


@pytest.fixture
def fake_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the (tens of CPU-minutes) CPU trace with a fixed one."""
    monkeypatch.setattr(coverage_trace, "build", _stored)
    monkeypatch.setattr(coverage, "generated_cases", lambda: {"opinfo": {}})


def test_stored_trace_reads_back_as_observed_and_declared() -> None:
    """The per-case store gives the audit's {overload: [who]} maps and declarations."""
    trace = _stored()
    assert coverage_trace.observed_overloads(trace) == FAKE_TRACE
    assert coverage_trace.declared_overloads(trace) == {"aten::add", "aten::mul"}


def test_families_follow_the_schema() -> None:
    """out=, in-place, view, backward, foreach, private and functional overloads."""
    assert family("aten::add.out") == "out"
    assert family("aten::max.dim_max") == "out"
    assert family("aten::add_.Tensor") == "in-place"
    assert family("aten::copy_") == "in-place"
    assert family("aten::transpose.int") == "view"
    assert family("aten::tanh_backward") == "backward"
    assert family("aten::_foreach_add.List") == "foreach/fused"
    assert family("aten::_softmax") == "private"
    assert family("aten::add.Tensor") == "functional"


def test_summary_counts_observed_and_declared_per_family() -> None:
    """Declared counts a packet's overloads (OpInfo declares aten::add), observed
    only what a case dispatched; both per family, excluded apart."""
    observed = coverage_trace.observed_overloads(_stored())
    declared = coverage_trace.declared_overloads(_stored())
    names = ["aten::add.Tensor", "aten::add.out", "aten::sub.out", "aten::linear"]
    rows = {n: coverage.classify(n, observed, declared) for n in names}
    by = coverage.summarize(rows)["by_family"]
    assert by["out"] == {
        "overloads": 2,
        "excluded": 0,
        "observed": 0,
        "declared": 1,
        "unknown": 2,
    }
    assert by["functional"]["observed"] == 1 and by["functional"]["declared"] == 1
    assert by["all"]["overloads"] == 4 and by["all"]["excluded"] == 1
    text = coverage.summary_markdown(coverage.summarize(rows))
    assert "| out | 2 | 0 | 0 (0.0%) | 1 (50.0%) | 2 (100.0%) |" in text


def test_classify_covers_excludes_and_leaves_unknown() -> None:
    """Traced overloads are covered; quantized and composite ones excluded with a reason."""
    assert (
        coverage.classify("aten::add.Tensor", FAKE_TRACE)["category"]
        == "covered_by_opinfo"
    )
    assert (
        coverage.classify("aten::set_.source_Storage", FAKE_TRACE)["category"]
        == "covered_by_suite"
    )
    row = coverage.classify("aten::quantize_per_tensor", FAKE_TRACE)
    assert row["category"] == "excluded" and "quantized" in row["reason"]
    assert "Composite" in coverage.classify("aten::linear", FAKE_TRACE)["reason"]
    assert coverage.classify("aten::sub.Tensor", FAKE_TRACE)["category"] == "unknown"


def test_a_kernel_of_other_devices_only_is_excluded_while_cpu_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mm.dtype has a Meta kernel only in this torch: excluded, saying so. The rule
    rests on the dispatcher: a torch with a CPU kernel for it leaves it unknown."""
    row = coverage.classify("aten::mm.dtype_out", FAKE_TRACE)
    assert row["category"] == "excluded"
    assert row["reason"].startswith("no CPU kernel in this torch: ")
    real = torch._C._dispatch_has_kernel_for_dispatch_key
    monkeypatch.setattr(
        torch._C,
        "_dispatch_has_kernel_for_dispatch_key",
        lambda name, key: (name, key) == ("aten::mm.dtype", "CPU") or real(name, key),
    )
    assert coverage.classify("aten::mm.dtype_out", FAKE_TRACE)["category"] == "unknown"


def test_every_exclusion_rule_names_what_this_torch_has() -> None:
    """A stale rule fails here: each glob matches a registered overload and each
    kernel a rule rests on is registered."""
    bare = [n.removeprefix("aten::") for n in coverage.registered_overloads()]
    for globs, kernels, _reason in coverage_exclusions.NO_CPU_KERNEL:
        for glob in globs:
            assert any(fnmatch.fnmatchcase(n, glob) for n in bare), glob
        assert all(k in bare for k in kernels), kernels
    assert all(n in bare for n in coverage_exclusions.DEVICE_HOOKS)


def test_a_device_hook_is_listed_apart_with_its_case() -> None:
    """_copy_from, which its case's CPU run dispatches (and CPU's kernel refuses), is
    not counted observed: the audit excludes it, naming the case that judges it on a
    device."""
    trace = {"opinfo": {}, "suites": {"aten::_copy_from": ["copies/x/check/-/-"]}}
    row = coverage.classify("aten::_copy_from", trace)
    assert row["category"] == "excluded"
    assert "judged on a device by copies/copy_from_hooks" in row["reason"]


def test_every_registered_overload_gets_one_category() -> None:
    """The audit maps every aten overload of the installed torch."""
    names = coverage.registered_overloads()
    assert len(names) > 1000 and all(n.startswith("aten::") for n in names)
    rows = {n: coverage.classify(n, FAKE_TRACE) for n in names}
    summary = coverage.summarize(rows)
    assert sum(summary["counts"].values()) == len(names)


def test_audit_writes_results_and_check_fails_on_unknown(
    tmp_path: Path, fake_trace: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """audit writes the four files; check --fail-on-unknown exits 1 when unknowns remain."""
    assert main(["coverage", "audit", "--results", str(tmp_path)]) == 0
    out = tmp_path / "coverage"
    for name in ("aten_coverage_audit.json", "pending_review.json",
                 "generated_cases.json", "summary.json", "summary.md"):  # fmt: skip
        assert (out / name).exists(), name
    pending = json.loads((out / "pending_review.json").read_text())["overloads"]
    assert "aten::sub.Tensor" in pending
    assert (
        main(["coverage", "check", "--fail-on-unknown", "--results", str(tmp_path)])
        == 1
    )
    assert main(["coverage", "check", "--results", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["coverage", "report", "--results", str(tmp_path)]) == 0
    assert "covered_by_opinfo" in capsys.readouterr().out


def test_report_without_audit_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """report before any audit says so in one line, with the audit command: at a
    checkout root it starts with bin/, as the command a person pastes there."""
    monkeypatch.chdir(tmp_path)
    assert main(["coverage", "report", "--results", "out"]) == 2
    err = capsys.readouterr().err
    assert "no audit yet" in err
    assert "(run `torchcts-cases coverage audit --results out`)" in err
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / ".launch").write_text("#!/bin/sh\n")
    assert main(["coverage", "report", "--results", "out"]) == 2
    err = capsys.readouterr().err
    assert "(run `bin/torchcts-cases coverage audit --results out`)" in err


def test_refresh_after_a_run_reads_the_trace_and_never_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cached trace, refresh writes coverage/ and says the observed share;
    without one it writes a note naming the command, and traces nothing."""
    monkeypatch.setattr(coverage, "generated_cases", lambda: {"opinfo": {}})
    monkeypatch.setattr(coverage_trace, "build", lambda: pytest.fail("traced"))
    monkeypatch.setattr(coverage_trace, "load", _stored)
    line = coverage.refresh(tmp_path)
    assert line.startswith("coverage: ") and "observed" in line
    summary = json.loads((tmp_path / "coverage" / "summary.json").read_text())
    assert summary["counts"]["covered_by_opinfo"] == 2
    assert summary["trace"]["cases_traced"] == 3

    monkeypatch.setattr(coverage_trace, "load", lambda: None)
    empty = tmp_path / "cold"
    assert "coverage audit" in coverage.refresh(empty)
    assert "coverage audit" in (empty / "coverage" / "summary.md").read_text()
