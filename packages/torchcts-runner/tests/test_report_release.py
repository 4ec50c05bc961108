"""A case's report lets go of its record once journaled, keeping its status word."""

from __future__ import annotations

from types import SimpleNamespace

from torchcts_runner.items import (
    RECORD_PROPERTY,
    carried,
    record_of,
    record_text,
    release_record,
    status_of,
)
from torchcts_schema import CaseRecord, Status


def _record(status: Status) -> CaseRecord:
    return CaseRecord(
        case_id="fake/x/forward/float32/0",
        node_id="",
        op="x",
        variant="forward",
        dtype="float32",
        sample=0,
        level=1,
        status=status,
        expected_source=None,
        detail="values differ",
    )


def test_a_released_report_keeps_its_status_and_other_properties() -> None:
    """The record's JSON text leaves the report; the status word and any other
    user property stay, so the terminal's words and summary are unchanged."""
    record = _record(Status.CRASHED)
    report = SimpleNamespace(
        when="call",
        user_properties=[(RECORD_PROPERTY, record_text(record)), ("kept", 1)],
    )
    assert status_of(report) == "crashed"
    release_record(report, record)
    assert report.user_properties == [("kept", 1)]
    assert record_of(report) is None
    assert status_of(report) == "crashed"


def test_a_report_without_a_record_has_no_status() -> None:
    """Setup and teardown reports carry no record: pytest's own words apply."""
    report = SimpleNamespace(when="setup", user_properties=[])
    assert status_of(report) is None


def test_a_record_crosses_a_process_boundary_as_text_only() -> None:
    """An xdist worker's report carries the record's JSON text (execnet sends
    plain data); in process the record itself. Both read back equal to it."""
    record = _record(Status.FAILED)
    worker = carried(record, SimpleNamespace(workerinput={"workerid": "gw0"}))  # type: ignore[arg-type]
    here = carried(record, SimpleNamespace())  # type: ignore[arg-type]
    assert isinstance(worker, str) and here is record
    for value in (worker, here):
        report = SimpleNamespace(
            when="call", user_properties=[(RECORD_PROPERTY, value)]
        )
        assert record_of(report) == record
