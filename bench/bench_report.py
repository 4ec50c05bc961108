"""Report costs: a 100,000-case result (load, markdown, HTML, JUnit, whole render) and a
level-1 shaped result (563 executed cases, 325,257 not_run) rendered after loading."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from run import BenchRow
from torchcts_report import load_input, render_html, render_junit, render_markdown
from torchcts_report.checks import check_artifact
from torchcts_report.inputs import ReportInput
from torchcts_report.render import render_reports
from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    NextFix,
    NotRunReason,
    RunArtifact,
    RunMetadata,
    Status,
    load_result,
    make_case_id,
    node_id_for_case,
    write_history,
)

N = 100_000
DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "bool"]
VARIANTS = ["forward", "method", "inplace", "out", "backward"]


def _record(i: int) -> CaseRecord:
    op = f"op{i % 600}"
    dtype = DTYPES[(i // 600) % len(DTYPES)]
    variant = VARIANTS[(i // 4200) % len(VARIANTS)]
    sample = i // 21000
    case_id = make_case_id("opinfo", op, variant, dtype, sample)
    common = {
        "case_id": case_id,
        "node_id": node_id_for_case(case_id),
        "op": op,
        "variant": variant,
        "dtype": dtype,
        "sample": sample,
        "level": 1 + i % 8,
        "expected_source": ExpectedSource.CPU_REFERENCE,
        "duration_s": 0.001 * (i % 17),
    }
    kind = i % 40
    if kind == 0:
        return CaseRecord(
            status=Status.FAILED,
            mismatch=f"values differ at {i % 97} "
            f"of 128 elements (max abs diff {i / 7:.3f})",
            **common,
        )
    if kind == 1:
        return CaseRecord(
            status=Status.ERROR,
            exception_type="RuntimeError",
            exception_message=f"bad pointer {hex(i * 4096)} in op{i % 9}",
            **common,
        )
    if kind == 2:
        return CaseRecord(
            status=Status.UNSUPPORTED,
            exception_type="NotImplementedError",
            exception_message=f"aten::{op} is not implemented",
            **common,
        )
    if kind == 3 and i % 400 == 3:
        return CaseRecord(
            status=Status.CRASHED,
            crash=CrashInfo(CrashKind.SIGNAL, signal="SIGSEGV"),
            **common,
        )
    if kind in (4, 5):
        return CaseRecord(
            status=Status.NOT_RUN,
            not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
            **common,
        )
    return CaseRecord(status=Status.PASSED, **common)


def _metadata(**fields: object) -> RunMetadata:
    return RunMetadata(
        run_key="simdev_bench",
        device="simdev",
        hardware_key="bench",
        backend="torchcts_simdev",
        os="Linux",
        python="3.11",
        torch_version="2.13.0",
        torchcts_version="0.1.0",
        manifest_digest="sha256:bench",
        command="torchcts-run --manifest manifests/simdev.py",
        started_at="2026-11-30T00:00:00+00:00",
        ended_at="2026-11-30T01:00:00+00:00",
        completed_normally=True,
        **fields,  # type: ignore[arg-type]
    )


def _artifact() -> RunArtifact:
    return RunArtifact.from_records(_metadata(), [_record(i) for i in range(N)])


# The shape of the reference device's level-1 run: few executed cases, and every case
# deeper than level 1 or in an undeclared dtype recorded as not_run with its reason.
L1_OPS = 732
L1_DTYPES = ("float64", "float32", "bfloat16", "float16", "complex64", "int64", "int32")
L1_VARIANTS = ("noncontiguous", "forward", "backward", "out", "method", "inplace")
L1_EXECUTED = (
    (Status.PASSED, 542),
    (Status.FAILED, 13),
    (Status.UNSUPPORTED, 3),
    (Status.CRASHED, 3),
    (Status.ERROR, 2),
)
L1_NOT_RUN = (
    (NotRunReason.LEVEL_FILTERED, 272_963),
    (NotRunReason.DTYPE_NOT_SUPPORTED, 51_146),
    (NotRunReason.COMPARISON_NOT_VALID, 1_090),
    (NotRunReason.OP_EXCLUDED, 52),
    (NotRunReason.CAPABILITY_NOT_DECLARED, 5),
    (NotRunReason.DEVICE_COUNT, 1),
)
L1_NOT_RUN_TOTAL = sum(n for _, n in L1_NOT_RUN)


def _l1_record(i: int, status: Status, **fields: object) -> CaseRecord:
    op = f"op{i % L1_OPS}"
    dtype = L1_DTYPES[(i // L1_OPS) % len(L1_DTYPES)]
    per_sample = L1_OPS * len(L1_DTYPES) * len(L1_VARIANTS)
    variant = L1_VARIANTS[(i // (L1_OPS * len(L1_DTYPES))) % len(L1_VARIANTS)]
    case_id = make_case_id("opinfo", op, variant, dtype, i // per_sample)
    return CaseRecord(
        case_id=case_id,
        node_id=node_id_for_case(case_id),
        op=op,
        variant=variant,
        dtype=dtype,
        sample=i // per_sample,
        status=status,
        expected_source=ExpectedSource.CPU_REFERENCE,
        **fields,  # type: ignore[arg-type]
    )


def _l1_executed(i: int, status: Status) -> CaseRecord:
    extra: dict[str, object] = {"level": 1, "duration_s": 0.002 * (i % 13)}
    if status is Status.FAILED:
        extra["mismatch"] = f"values differ at {i % 7 + 1} of 64 elements"
    elif status is Status.ERROR:
        extra |= {"exception_type": "RuntimeError", "exception_message": f"bad {i}"}
    elif status is Status.UNSUPPORTED:
        extra |= {"exception_type": "NotImplementedError", "exception_message": "no"}
    elif status is Status.CRASHED:
        extra["crash"] = CrashInfo(CrashKind.SIGNAL, signal="SIGSEGV")
    return _l1_record(i, status, **extra)


def _l1_not_run(i: int, reason: NotRunReason) -> CaseRecord:
    level = 2 + i % 7 if reason is NotRunReason.LEVEL_FILTERED else 1
    dtype = L1_DTYPES[(i // L1_OPS) % len(L1_DTYPES)]
    detail = {
        NotRunReason.LEVEL_FILTERED: f"level {level} > 1",
        NotRunReason.DTYPE_NOT_SUPPORTED: f"op not matched by DTYPES['{dtype}']",
    }.get(reason, f"{reason.value} for this op")
    return _l1_record(
        i,
        Status.NOT_RUN,
        level=level,
        not_run_reason=reason,
        next_fix=NextFix.SUPPORT_SURFACE,
        detail=detail,
    )


def level1_artifact() -> RunArtifact:
    """A synthetic artifact shaped like the reference device's level-1 run."""
    records: list[CaseRecord] = []
    for status, count in L1_EXECUTED:
        start = len(records)
        records += [_l1_executed(i, status) for i in range(start, start + count)]
    for reason, count in L1_NOT_RUN:
        start = len(records)
        records += [_l1_not_run(i, reason) for i in range(start, start + count)]
    return RunArtifact.from_records(_metadata(level=1), records)


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def rows() -> list[BenchRow]:
    """Time each step of rendering a 100,000-case result, the whole command, and the
    render of a level-1 shaped result."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        write_history(results, "simdev_bench", _artifact())
        schema_s = _time(lambda: load_result(results))
        start = time.perf_counter()
        report = load_input(results)
        load_s = time.perf_counter() - start
        md_s = _time(lambda: render_markdown(report))
        html_s = _time(lambda: render_html(report))
        junit_s = _time(lambda: render_junit(report))
        whole_s = _time(lambda: render_reports(load_input(results), results))
        sizes = {p.suffix: p.stat().st_size for p in results.glob("simdev_bench.*")}
    note = f"{N:,} cases"
    return [
        BenchRow("report", "schema load_result alone", schema_s, "s", note),
        BenchRow("report", "load (schema loader + checks)", load_s, "s", note),
        BenchRow("report", "markdown scorecard", md_s, "s", note),
        BenchRow("report", "HTML (markdown-it + grid)", html_s, "s", note),
        BenchRow("report", "JUnit XML", junit_s, "s", note),
        BenchRow("report", "render command end to end", whole_s, "s", note),
        BenchRow("report", "per case, end to end", whole_s / N * 1e6, "us", note),
        BenchRow("report", "JUnit size", sizes.get(".xml", 0) / 1e6, "MB", note),
        BenchRow("report", "HTML size", sizes.get(".html", 0) / 1e6, "MB", note),
        *_level1_rows(),
    ]


def _level1_rows() -> list[BenchRow]:
    """Render (after loading) and check a level-1 shaped result: best of three."""
    artifact = level1_artifact()
    report = ReportInput(artifact, artifact.metadata.run_key)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        render_s = min(_time(lambda: render_reports(report, out)) for _ in range(3))
        junit = out / f"{report.run_key}.junit.xml"
        junit_mb = junit.stat().st_size / 1e6
    check_s = min(_time(lambda: check_artifact(artifact, "bench")) for _ in range(3))
    note = f"{len(artifact.results)} executed, {L1_NOT_RUN_TOTAL:,} not_run"
    return [
        BenchRow("report", "render md+html+junit, 325k not_run", render_s, "s", note),
        BenchRow("report", "check_artifact, 325k not_run", check_s, "s", note),
        BenchRow("report", "JUnit size, 325k not_run", junit_mb, "MB", note),
    ]
