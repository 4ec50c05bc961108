"""Small builders of records and metadata shared by the schema tests."""

from __future__ import annotations

from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    NotRunReason,
    RunMetadata,
    Status,
    make_case_id,
    node_id_for_case,
)


def metadata(**overrides: object) -> RunMetadata:
    """Run metadata with plausible defaults."""
    base: dict[str, object] = {
        "run_key": "simdev_x86-64-2cpu-24gb",
        "device": "simdev",
        "hardware_key": "x86-64-2cpu-24gb",
        "backend": "simdev",
        "os": "Linux",
        "python": "3.11.7",
        "torch_version": "2.13.0",
        "torchcts_version": "0.1.0",
        "manifest_digest": "sha256:00",
        "command": "torchcts-run --manifest manifests/simdev.py",
        "started_at": "2026-11-30T01:00:00Z",
    }
    base.update(overrides)
    return RunMetadata(**base)  # type: ignore[arg-type]


def record(
    op: str = "add", sample: int = 0, status: Status = Status.PASSED, **kw: object
) -> CaseRecord:
    """A case record whose ids follow the canonical mapping."""
    case_id = make_case_id("opinfo", op, "forward", "float32", sample)
    fields: dict[str, object] = {
        "case_id": case_id,
        "node_id": node_id_for_case(case_id),
        "op": op,
        "variant": "forward",
        "dtype": "float32",
        "sample": sample,
        "level": 1,
        "status": status,
        "expected_source": ExpectedSource.CPU_REFERENCE,
    }
    if status is Status.CRASHED:
        fields["crash"] = CrashInfo(CrashKind.SIGNAL, "SIGSEGV", -11, "worker died")
    if status is Status.NOT_RUN:
        fields["not_run_reason"] = NotRunReason.LEVEL_FILTERED
    fields.update(kw)
    return CaseRecord(**fields)  # type: ignore[arg-type]
