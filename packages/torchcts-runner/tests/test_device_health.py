"""Sticky device errors: after a device error the device is probed; a case that breaks
it is named, no later case is judged on the broken device, and nobody else is blamed.

The fake backend (``fakecases``, named as the manifest's backend module) breaks its
device for the process at op ``poison`` (raising) or ``stealth`` (silently), and its
``torchcts_health_check`` fails from then on.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path

import pytest
from runner_helpers import artifact_records, run_args, use_fake_source, write_manifest
from torchcts_runner.device_health import (
    MET_BROKEN,
    POISON_CHECK,
    POISONED,
    PROBE_AFTER,
    PROBE_BEFORE,
    UNUSABLE,
    Finding,
    generic_check,
    health_check_for,
    needs_probe,
    settle,
)
from torchcts_schema import CaseRecord, CrashInfo, CrashKind, NextFix, Status

BROKE = "this case left the device unusable: the health probe after it failed"
POISON = "fake/poison/forward/float32/0"


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


def _record(status: Status, **extra: object) -> CaseRecord:
    return CaseRecord(
        case_id="fake/x/forward/float32/0", node_id="", op="x", variant="forward",
        dtype="float32", sample=0, level=1, status=status, expected_source=None,
        detail="the backend raised an exception", worker="gw0", extra=dict(extra),
    )  # fmt: skip


def test_probe_only_after_errors_that_reached_the_device() -> None:
    """Wrong values, unsupported paths and harness errors before the device: no probe."""
    assert needs_probe(Status.ERROR, reached_device=True)
    assert not needs_probe(Status.ERROR, reached_device=False)
    for status in (Status.PASSED, Status.FAILED, Status.UNSUPPORTED, Status.CRASHED):
        assert not needs_probe(status, reached_device=True)


def test_generic_probe_and_backend_hook() -> None:
    """The generic probe passes on a working device; the imported backend module's
    hook replaces it."""
    generic_check("cpu")
    assert health_check_for(None) is generic_check
    assert health_check_for("torchcts_schema") is generic_check  # no hook there
    fake = importlib.import_module("fakecases")
    assert health_check_for("fakecases") is fake.torchcts_health_check


def test_settle_names_the_case_only_when_a_fresh_process_shows_it() -> None:
    """Fresh run: probe before fails -> unusable (configuration); after fails -> the
    case broke it (never a pass); else it met a broken device and is not blamed."""
    first = _record(Status.ERROR, **{PROBE_AFTER: "RuntimeError: gone"})
    unusable, found = settle(
        first, lambda: _record(Status.ERROR, **{PROBE_BEFORE: "x"})
    )
    assert found is Finding.UNUSABLE and unusable.next_fix is NextFix.CONFIGURATION
    assert unusable.extra == {UNUSABLE: "x"} and unusable.status is Status.ERROR
    fresh = _record(Status.PASSED, **{PROBE_AFTER: "RuntimeError: gone again"})
    broke, found = settle(first, lambda: fresh)
    assert found is Finding.BROKE_IT and broke.status is Status.ERROR
    assert broke.next_fix is NextFix.CRASH_EVIDENCE
    assert broke.extra == {POISONED: "RuntimeError: gone again"}
    assert (broke.detail or "").startswith(BROKE + " (RuntimeError: gone again)")
    met, found = settle(first, lambda: _record(Status.PASSED))
    assert found is Finding.MET_IT and met.status is Status.PASSED
    assert met.extra == {MET_BROKEN: "RuntimeError: gone"} and met.next_fix is None
    assert (met.detail or "").startswith("its first run (in gw0: error) was followed")
    assert "left the device working" in (met.detail or "")


def test_a_fresh_run_that_dies_is_its_crash_never_a_working_device() -> None:
    """When the fresh process dies, the case's record is that crash, and its note
    says so instead of claiming the fresh run left the device working."""
    first = _record(Status.ERROR, **{PROBE_AFTER: "RuntimeError: gone"})
    hang = CrashInfo(kind=CrashKind.HANG, detail="no heartbeat for 2s")
    fresh = replace(
        _record(Status.CRASHED), crash=hang, next_fix=NextFix.CRASH_EVIDENCE
    )
    crashed, found = settle(first, lambda: fresh)
    assert found is Finding.CRASHED and crashed.status is Status.CRASHED
    assert crashed.crash == hang and crashed.next_fix is NextFix.CRASH_EVIDENCE
    assert crashed.extra == {MET_BROKEN: "RuntimeError: gone"}
    detail = crashed.detail or ""
    assert "that process died (no heartbeat for 2s)" in detail
    assert "left the device working" not in detail


def _run(pytester: pytest.Pytester, ops: list[str], *extra: str, workers: int = 0):  # type: ignore[no-untyped-def]
    write_manifest(pytester, ops, BACKEND_IMPORT="fakecases")
    result = pytester.runpytest_subprocess(*run_args(*extra, workers=workers))
    return result, artifact_records(pytester.path / "results")


def _assert_poison_named(record: CaseRecord) -> None:
    assert record.status is Status.ERROR, record
    assert record.isolation == POISON_CHECK
    assert record.next_fix is NextFix.CRASH_EVIDENCE
    assert (record.detail or "").startswith(BROKE), record.detail
    assert f"fake device is broken (since {POISON})" in str(record.extra[POISONED])
    assert record.exception_message == "fake device fault; the device is now broken"


UNTOUCHED = {"ok": Status.PASSED, "wrong": Status.FAILED, "boom": Status.ERROR}


@pytest.mark.parametrize(("workers", "isolate"), [(0, "none"), (2, "none"), (0, "all")])
def test_a_case_that_breaks_the_device_is_named_and_nobody_else_is(
    pytester: pytest.Pytester, workers: int, isolate: str
) -> None:
    """The breaking case is error, named, from a fresh process, in every mode; the
    cases after it keep the statuses they have on a working device; no crash, no
    retry; an xdist worker is replaced (said once), without xdist the rest runs
    isolated."""
    ops = ["ok", "poison", "wrong", "boom", "after"]
    result, records = _run(pytester, ops, "--isolate", isolate, workers=workers)
    assert result.ret == 1, result.stdout.str()
    _assert_poison_named(records[POISON])
    for op, status in {**UNTOUCHED, "after": Status.PASSED}.items():
        record = records[f"fake/{op}/forward/float32/0"]
        assert record.status is status, record
        assert not {POISONED, MET_BROKEN, PROBE_AFTER} & set(record.extra), record
        assert record.detail in (None, "the backend raised an exception"), record
    assert not list((pytester.path / "results").glob("*_crashes"))
    assert "retry" not in {r.isolation for r in records.values()}
    out = result.stdout.str() + result.stderr.str()
    left = f"left after {POISON} because its device failed a health probe"
    assert out.count(left) == (1 if workers else 0), out
    assert "crashed while running" not in out
    if workers == 0 and isolate == "none":
        after = [records[f"fake/{op}/forward/float32/0"].isolation for op in ops[2:]]
        assert after == ["after_poison"] * 3


def test_a_case_that_meets_a_broken_device_is_not_blamed(
    pytester: pytest.Pytester,
) -> None:
    """stealth breaks the device without raising; ok, next, errors there: its record
    is its fresh run (passed, with a note), not the error; the silent breaker itself
    stays unnamed (nothing showed it)."""
    result, records = _run(pytester, ["stealth", "ok"])
    assert result.ret == 0, result.stdout.str()
    ok = records["fake/ok/forward/float32/0"]
    assert ok.status is Status.PASSED and ok.isolation == POISON_CHECK
    assert "since fake/stealth/forward/float32/0" in str(ok.extra[MET_BROKEN])
    assert "in a fresh process it left the device working" in (ok.detail or "")
    stealth = records["fake/stealth/forward/float32/0"]
    assert stealth.status is Status.PASSED and not stealth.extra


@pytest.mark.parametrize("workers", [0, 2])
def test_a_device_unusable_from_the_start_stops_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A device that fails the probe before any case blames no case: the first error
    says so (configuration) and the run stops there, saying why, instead of
    recording every other case as the same error (a CUDA manifest on a machine
    without CUDA ran 51,600 of them); the rest is left for --resume."""
    log = pytester.path / "probes.log"
    monkeypatch.setenv("FAKE_DEVICE_UNUSABLE", "1")
    monkeypatch.setenv("FAKE_PROBE_LOG", str(log))
    result, records = _run(pytester, ["ok", "boom", "after"], workers=workers)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert 1 <= len(records) <= max(1, workers), records  # one case per process
    for record in records.values():
        assert record.status is Status.ERROR, record
        assert record.next_fix is NextFix.CONFIGURATION, record
        assert "it is unusable, not broken by this case" in (record.detail or "")
    result.stdout.fnmatch_lines(
        ["run stopped: *it is unusable, not broken by this case*so none ran*"]
    )
    result.stdout.fnmatch_lines(["run incomplete: *continue with --resume"])


def test_no_probe_without_device_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Passes, wrong values, unsupported paths and outcomes decided before the device
    (no reference, a skip) never probe; the one device error probes once."""
    log = tmp_path / "probes.log"
    monkeypatch.setenv("FAKE_PROBE_LOG", str(log))
    _, records = _run(
        pytester, ["ok", "wrong", "unsupported", "oracle", "skip", "boom"]
    )
    assert len(log.read_text().splitlines()) == 1
    assert records["fake/boom/forward/float32/0"].extra == {}  # the probe passed
