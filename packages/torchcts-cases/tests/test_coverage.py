"""The coverage audit: categories, files written, check --fail-on-unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torchcts_cases import coverage
from torchcts_cases.cli import main

FAKE_TRACE = {
    "opinfo": {"aten::add.Tensor": ["add"], "aten::mul.Tensor": ["mul"]},
    "suites": {"aten::set_.source_Storage": ["views/x/check/-/-"]},
}


@pytest.fixture
def fake_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the (minute-long) CPU trace with a fixed one."""
    monkeypatch.setattr(coverage, "observed_overloads", lambda: FAKE_TRACE)
    monkeypatch.setattr(coverage, "generated_cases", lambda: {"opinfo": {}})


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
    assert coverage.classify("aten::sub.Tensor", FAKE_TRACE) == {"category": "unknown"}


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
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report before any audit says so in one line."""
    assert main(["coverage", "report", "--results", str(tmp_path)]) == 2
    assert "no audit yet" in capsys.readouterr().err
