"""The case contract: specs survive JSON, and records are built from a spec in one way."""

from __future__ import annotations

from torchcts_schema import (
    CaseSpec,
    ExpectedSource,
    NotRunReason,
    Status,
    node_id_for_case,
    record_for,
)

SPEC = CaseSpec(
    "opinfo/add/forward/float32/3",
    "opinfo",
    "add",
    "forward",
    "float32",
    3,
    2,
    ExpectedSource.CPU_REFERENCE,
    "forward",
    ("aten::add.Tensor",),
)


def test_spec_round_trips_through_json_form() -> None:
    """to_dict/from_dict keep every field, surfaces included."""
    assert CaseSpec.from_dict(SPEC.to_dict()) == SPEC
    assert SPEC.to_dict()["expected_source"] == "cpu_reference"


def test_record_for_copies_the_spec_and_adds_the_ending() -> None:
    """A record gets the spec's identity fields and its node id, then the given ones."""
    record = record_for(SPEC, SPEC.case_id, status=Status.PASSED, duration_s=0.5)
    assert (record.case_id, record.op, record.variant, record.dtype) == (
        "opinfo/add/forward/float32/3",
        "add",
        "forward",
        "float32",
    )
    assert (record.sample, record.level, record.suite) == (3, 2, "opinfo")
    assert record.node_id == "torchcts::opinfo/add/forward/float32/3"
    assert record.status is Status.PASSED and record.duration_s == 0.5


def test_record_for_without_a_spec_reads_the_id() -> None:
    """A case no source can rebuild still gets an honest record from its id alone."""
    case_id = "fake/segv/forward/float64/1"
    record = record_for(
        None, case_id, status=Status.NOT_RUN, not_run_reason=NotRunReason.OP_EXCLUDED
    )
    assert (record.suite, record.op, record.dtype, record.sample) == (
        "fake",
        "segv",
        "float64",
        1,
    )
    assert record.level == 1 and record.expected_source is None
    assert record.node_id == node_id_for_case(case_id)
