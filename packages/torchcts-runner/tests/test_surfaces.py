"""Records carry the overloads their case reaches (the case source's
``case_surfaces``), and a known-crash rule can name one overload."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from runner_helpers import journal_records, run_args, use_fake_source, write_manifest
from torchcts_isolate import Ledger, LedgerRule
from torchcts_runner.casesource import surfaces_or_none
from torchcts_runner.child_entry import run_case
from torchcts_runner.known_crash_match import KnownCrashMatcher
from torchcts_schema import (
    CaseSpec,
    ExpectedSource,
    Manifest,
    Status,
    rule_from_dict,
)

RULE = {
    "id": "add-tensor", "backend": "simdev", "match": {"surface": "aten::add.Tensor"},
    "expected_signal": "SIGSEGV", "reason": "segfaults in add.Tensor",
    "owner": "tests", "repro": "torchcts-run ...", "review_after": "2099-01-01",
}  # fmt: skip


def _spec(sample: int) -> CaseSpec:
    return CaseSpec(
        f"opinfo/add/forward/float32/{sample}", "opinfo", "add", "forward",
        "float32", sample, 1, ExpectedSource.CPU_REFERENCE, "forward", ("aten::add",),
    )  # fmt: skip


def test_a_surface_rule_matches_the_overload_a_case_reaches() -> None:
    """Declared packets (aten::add) never match aten::add.Tensor; the reached
    overloads do, and only for the case that reaches it."""
    manifest = Manifest(path=Path("m.py"), digest="", device="simdev",
                        backend_name="simdev")  # fmt: skip
    ledger = Ledger((LedgerRule(rule_from_dict(RULE), "known_segfaults.json", 0),))
    reached = {0: ("aten::add.Tensor",), 1: ("aten::add.Scalar",)}

    def surfaces(spec: CaseSpec) -> tuple[str, ...]:
        return reached[spec.sample or 0]

    declared_only = KnownCrashMatcher(
        ledger, manifest, torch_version=None, hardware_key=None
    )
    traced = KnownCrashMatcher(
        ledger, manifest, torch_version=None, hardware_key=None, surfaces=surfaces
    )
    assert declared_only.rule_ids(_spec(0)) == ()
    assert traced.rule_ids(_spec(0)) == ("add-tensor",)
    assert traced.rule_ids(_spec(1)) == ()
    assert traced.surfaces_of(_spec(0)) == ("aten::add", "aten::add.Tensor")


SIMDEV = Manifest(path=Path("m.py"), digest="", device="simdev", backend_name="simdev")


def _recording_surfaces() -> tuple[list[str], Callable[[CaseSpec], tuple[str, ...]]]:
    """A surfaces lookup that notes each case it is asked about (loading the coverage
    trace is what the matcher must not do without a surface rule)."""
    asked: list[str] = []

    def surfaces(spec: CaseSpec) -> tuple[str, ...]:
        asked.append(spec.case_id)
        return ("aten::add.Tensor",)

    return asked, surfaces


def test_reached_overloads_are_looked_up_only_for_a_surface_rule() -> None:
    """Looking up what a case reaches loads the coverage trace: a ledger without a
    surface rule never asks, and matches as before."""
    manifest = SIMDEV
    asked, surfaces = _recording_surfaces()

    by_case = {**RULE, "id": "by-case", "match": {"case_glob": "opinfo/add/*/1"}}
    for rules, expected in (((), ()), ((by_case,), ("by-case",))):
        ledger = Ledger(
            tuple(LedgerRule(rule_from_dict(r), "f.json", 0) for r in rules)
        )
        matcher = KnownCrashMatcher(
            ledger, manifest, torch_version=None, hardware_key=None, surfaces=surfaces
        )
        assert matcher.rule_ids(_spec(0)) == ()
        assert matcher.rule_ids(_spec(1)) == expected
    assert asked == []
    with_surface = Ledger((LedgerRule(rule_from_dict(RULE), "f.json", 0),))
    matcher = KnownCrashMatcher(
        with_surface, manifest, torch_version=None, hardware_key=None, surfaces=surfaces
    )
    assert matcher.rule_ids(_spec(0)) == ("add-tensor",)
    assert asked == [_spec(0).case_id]


def test_rules_for_another_backend_are_never_weighed() -> None:
    """The packaged ledger's MPS rules (surface rules among them) leave a simdev run
    alone: no rule in its matcher, no trace lookup, nothing for a recheck to list."""
    manifest = SIMDEV
    asked, surfaces = _recording_surfaces()

    mps_rule = {**RULE, "id": "mps-add", "backend": "mps"}
    ledger = Ledger(
        (
            LedgerRule(rule_from_dict(mps_rule), "packaged", 0),
            LedgerRule(rule_from_dict(RULE), "f.json", 0),
        )
    )
    matcher = KnownCrashMatcher(
        ledger, manifest, torch_version=None, hardware_key=None, surfaces=surfaces
    )
    assert [item.rule.id for item in matcher.ledger.rules] == ["add-tensor"]
    assert matcher.sources() == {"add-tensor": "f.json"}
    only_mps = KnownCrashMatcher(
        Ledger(ledger.rules[:1]), manifest, torch_version=None, hardware_key=None,
        surfaces=surfaces,
    )  # fmt: skip
    assert not only_mps.any_rule
    assert only_mps.rule_ids(_spec(0)) == ()
    assert asked == []


def test_records_carry_surfaces_and_the_ledger_isolates_by_overload(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the case source naming overloads, each record's extra lists them and a
    rule on aten::segv.Tensor sends exactly that case to a child."""
    use_fake_source(pytester, monkeypatch)
    monkeypatch.setenv("FAKE_SURFACES", "ok,segv")
    write_manifest(pytester, ["ok", "segv", "wrong"])
    rule = {**RULE, "id": "fake-segv", "backend": "fake",
            "match": {"surface": "aten::segv.Tensor"}}  # fmt: skip
    (pytester.path / "known_segfaults.json").write_text(json.dumps({"rules": [rule]}))
    result = pytester.runpytest_subprocess(*run_args("--isolate", "ledger"))
    assert result.ret == 1, result.stdout.str()
    got = {r.op: r for r in journal_records(pytester.path / "results").values()}
    assert got["ok"].extra["surfaces"] == ["aten::ok.Tensor"]
    assert "surfaces" not in got["wrong"].extra
    assert got["segv"].isolation == "ledger" and got["segv"].status is Status.CRASHED
    assert got["ok"].isolation == "none"
    # the record the run's process makes for the child that died names them too
    assert got["segv"].extra["surfaces"] == ["aten::segv.Tensor"]


@pytest.mark.parametrize("how", ["xdist worker", "isolation child"])
def test_a_crashed_record_names_the_overloads_its_case_reaches(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A case that kills its process gets its record from another process (the xdist
    controller, the run's process for a child); that record names the overloads the
    case reaches as a record the case made itself would, so the crash packet and the
    backend evidence store key it on them; whichever process made the record."""
    use_fake_source(pytester, monkeypatch)
    monkeypatch.setenv("FAKE_SURFACES", "ok,segv,abort")
    write_manifest(pytester, ["ok", "segv", "abort"])
    extra = ("-n", "2") if how == "xdist worker" else ("--isolate", "all")
    result = pytester.runpytest_subprocess(*run_args(*extra))
    assert result.ret == 1, result.stdout.str()
    got = {r.op: r for r in journal_records(pytester.path / "results").values()}
    for op in ("segv", "abort"):
        assert got[op].status is Status.CRASHED, got[op]
        assert got[op].extra["surfaces"] == [f"aten::{op}.Tensor"]
    assert got["ok"].extra["surfaces"] == ["aten::ok.Tensor"]


def test_a_whole_run_refreshes_coverage_and_a_subset_does_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case source's refresh_coverage runs once a whole run completed (its line
    in the summary); a run of some ops leaves coverage/ alone."""
    use_fake_source(pytester, monkeypatch)
    log = pytester.path / "coverage-calls.txt"
    monkeypatch.setenv("FAKE_COVERAGE", str(log))
    write_manifest(pytester, ["ok", "wrong"])
    subset = pytester.runpytest_subprocess(*run_args("--torchcts-op", "ok"))
    assert subset.ret == 0, subset.stdout.str()
    assert not (pytester.path / "results" / "coverage").exists()
    assert not log.exists()
    whole = pytester.runpytest_subprocess(*run_args())
    assert whole.ret == 1, whole.stdout.str()
    # the folder as the reports line shows it: relative, no host path
    whole.stdout.fnmatch_lines(["coverage: fake summary written; results/coverage/"])
    summary = pytester.path / "results" / "coverage" / "summary.md"
    assert summary.read_text() == "fake\n"
    # prepared once in a thread while the cases ran, then written at the end
    assert log.read_text().splitlines() == [
        "warm torchcts-coverage-warm-up",
        "refresh MainThread",
    ]


def test_a_source_with_no_coverage_line_adds_none(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case source whose refresh_coverage has nothing to say (returns None) adds
    no line to the summary (it printed ``None`` under the reports line)."""
    use_fake_source(pytester, monkeypatch)
    monkeypatch.delenv("FAKE_COVERAGE", raising=False)
    write_manifest(pytester, ["ok"])
    whole = pytester.runpytest_subprocess(*run_args())
    assert whole.ret == 0, whole.stdout.str()
    lines = whole.stdout.str().splitlines()
    reports = next(i for i, line in enumerate(lines) if line.startswith("reports: "))
    assert lines[reports + 1].startswith("=") and "None" not in lines, lines


def test_an_isolation_child_leaves_the_surfaces_to_its_parent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child's own record names no surfaces (it never reads the trace; the parent
    reads it while the child warms up and names them, as the test above shows)."""
    use_fake_source(pytester, monkeypatch)
    monkeypatch.setenv("FAKE_SURFACES", "ok")
    manifest = write_manifest(pytester, ["ok"])
    options = {"case_source": "fakecases", "run_key": "k", "isolation": "all"}
    record = run_case(
        {"case_id": "fake/ok/forward/float32/0", "manifest": str(manifest),
         "device": "cpu", "results_dir": str(pytester.path), "options": options}
    )  # fmt: skip
    assert record["status"] == "passed"
    assert "surfaces" not in record.get("extra", {})


def test_a_lookup_that_raises_leaves_a_crash_record_without_surfaces() -> None:
    """Records made outside a case's own run (a crash seen by another process) take
    the surfaces as evidence on top: a lookup that raises gives none, not an error."""

    def broken(spec: object) -> list[str]:
        raise RuntimeError("trace unreadable")

    assert surfaces_or_none(lambda spec: ["aten::add.Tensor"], object()) == (
        "aten::add.Tensor",
    )
    assert surfaces_or_none(broken, object()) == ()
