"""Report costs for a 100,000-case result: load, markdown, HTML, JUnit, whole render."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from run import BenchRow
from torchcts_report import load_input, render_html, render_junit, render_markdown
from torchcts_report.render import render_reports
from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
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


def _artifact() -> RunArtifact:
    meta = RunMetadata(
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
    )
    return RunArtifact.from_records(meta, [_record(i) for i in range(N)])


def _time(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def rows() -> list[BenchRow]:
    """Time each step of rendering a 100,000-case result, and the whole command."""
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
    ]
