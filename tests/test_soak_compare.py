"""The soak's verdict (bench/soak_compare.py): lost, duplicated, invented, changed."""

from __future__ import annotations

import json
from typing import Any

from script_module import load_script

soak = load_script("bench/soak_compare.py")
Outcome = soak.Outcome
PASSED = Outcome("passed")
SEGV = soak.outcome_of("crashed", crash_kind="signal")
FILTERED = soak.outcome_of("not_run", not_run_reason="level_filtered")


def _case(case_id: str, status: str) -> str:
    return json.dumps(
        {"type": "case", "record": {"case_id": case_id, "status": status}},
        separators=(",", ":"),
    )


def _counts(result: Any) -> dict[str, int]:
    return {k: result.counts[k] for k in ("lost", "duplicated", "invented", "changed")}


def test_identical_results_are_clean() -> None:
    """The same outcomes and one record per case: every count is zero."""
    ref = {"a": PASSED, "b": SEGV, "c": FILTERED}
    result = soak.compare(ref, dict(ref), [_case("a", "passed"), _case("b", "crashed")])
    assert result.clean
    assert result.records == 3


def test_missing_case_is_lost() -> None:
    """A reference case without a final record counts as lost, with its id kept."""
    result = soak.compare({"a": PASSED, "b": PASSED}, {"a": PASSED}, [])
    assert _counts(result) == {"lost": 1, "duplicated": 0, "invented": 0, "changed": 0}
    assert result.lost == ["b"]


def test_extra_case_and_new_crash_are_invented() -> None:
    """A case the reference lacks, and a crash the reference lacks, are invented."""
    ref = {"a": PASSED, "b": Outcome("failed")}
    final = {"a": PASSED, "b": SEGV, "x": PASSED}
    result = soak.compare(ref, final, [])
    assert _counts(result) == {"lost": 0, "duplicated": 0, "invented": 2, "changed": 0}
    assert result.invented == ["b", "x"]


def test_other_status_or_crash_kind_or_reason_is_changed() -> None:
    """A different status, crash kind or not_run reason counts as changed once."""
    ref = {"a": PASSED, "b": SEGV, "c": FILTERED}
    final = {
        "a": Outcome("failed"),
        "b": soak.outcome_of("crashed", crash_kind="subprocess"),
        "c": soak.outcome_of("not_run", not_run_reason="op_excluded"),
    }
    result = soak.compare(ref, final, [])
    assert _counts(result) == {"lost": 0, "duplicated": 0, "invented": 0, "changed": 3}


def test_a_crash_that_was_not_one_is_invented_not_changed() -> None:
    """The counts are disjoint: passed in the reference, crashed now, is invented only."""
    result = soak.compare({"a": PASSED}, {"a": SEGV}, [])
    assert _counts(result) == {"lost": 0, "duplicated": 0, "invented": 1, "changed": 0}


def test_second_executed_record_is_a_duplicate() -> None:
    """Each executed case line past the first for an id is one duplicate."""
    lines = [_case("a", "passed"), _case("a", "passed"), _case("a", "crashed")]
    lines += [_case("b", "passed")]
    result = soak.compare({"a": PASSED, "b": PASSED}, {"a": PASSED, "b": PASSED}, lines)
    assert result.counts["duplicated"] == 2
    assert result.duplicated == ["a"]


def test_not_run_lines_blocks_and_a_torn_tail_are_not_duplicates() -> None:
    """not_run records, case_block and run lines, and a half-written line never count."""
    lines = [
        '{"type":"run_start","resumed":false,"metadata":{}}',
        '{"type":"case_block","records":{}}',
        _case("a", "not_run"),
        _case("a", "passed"),
        '{"type":"run_start","resumed":true,"metadata":{}}',
        _case("a", "not_run"),
        '{"type":"case","record":{"case_id":"a","sta',
    ]
    assert soak.duplicated_records(lines) == {}


def test_outcome_ignores_details_outside_its_status() -> None:
    """Only a crashed case's kind and a not_run case's reason are compared."""
    assert soak.outcome_of("passed", crash_kind="signal") == PASSED
    assert soak.outcome_of("crashed", not_run_reason="x") == Outcome("crashed", None)
