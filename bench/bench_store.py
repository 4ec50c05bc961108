"""Artifact store costs: journal append, snapshot, history write/load, compact size."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from run import BenchRow
from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    JournalWriter,
    RunArtifact,
    RunMetadata,
    Status,
    encode_artifact,
    journal_path,
    latest_path,
    load_result,
    make_case_id,
    node_id_for_case,
    write_history,
    write_snapshot,
)

N = 100_000
STATUSES = [Status.PASSED] * 8 + [
    Status.FAILED,
    Status.ERROR,
    Status.NOT_RUN,
    Status.CRASHED,
]


def _records(n: int) -> list[CaseRecord]:
    out = []
    for i in range(n):
        case_id = make_case_id("opinfo", f"op{i % 700}", "forward", "float32", i // 700)
        status = STATUSES[i % len(STATUSES)]
        out.append(
            CaseRecord(
                case_id=case_id,
                node_id=node_id_for_case(case_id),
                op=f"op{i % 700}",
                variant="forward",
                dtype="float32",
                sample=i // 700,
                level=1 + i % 8,
                status=status,
                expected_source=ExpectedSource.CPU_REFERENCE,
                mismatch="max abs diff 0.5 at index (0, 1)"
                if status is Status.FAILED
                else None,
                duration_s=0.001 * (i % 13),
            )
        )
    return out


def _metadata() -> RunMetadata:
    return RunMetadata(
        run_key="bench_x", device="cpu", hardware_key="x", backend="cpu", os="Linux",
        python="3.11", torch_version="2.13.0", torchcts_version="0.1.0",
        manifest_digest="sha256:0", command="bench", started_at="2026-01-01T00:00:00Z",
    )  # fmt: skip


def rows() -> list[BenchRow]:
    """Measure the store on a synthetic 100,000-case run."""
    records = _records(N)
    artifact = RunArtifact.from_records(_metadata(), records)
    out: list[BenchRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        for fsync in (False, True):
            count = N if not fsync else 2000
            with JournalWriter(results / f"j{fsync}.jsonl", fsync=fsync) as journal:
                start = time.perf_counter()
                for record in records[:count]:
                    journal.case(record)
                per = (time.perf_counter() - start) / count
            out.append(
                BenchRow(
                    "store",
                    f"journal append per record (fsync={fsync})",
                    per * 1e6,
                    "us",
                )
            )
        start = time.perf_counter()
        write_snapshot(latest_path(results, "snap"), artifact, N)
        out.append(
            BenchRow(
                "store",
                "snapshot write, 100k records",
                time.perf_counter() - start,
                "s",
                "rate-limited: never per case",
            )
        )
        start = time.perf_counter()
        target = write_history(results, "bench_x", artifact)
        out.append(
            BenchRow(
                "store", "history write, 100k records", time.perf_counter() - start, "s"
            )
        )
        start = time.perf_counter()
        loaded = load_result(results, run_key="bench_x")
        out.append(
            BenchRow(
                "store", "history load, 100k records", time.perf_counter() - start, "s"
            )
        )
        assert len(loaded.records) == N
        with JournalWriter(journal_path(results, "rebuild")) as journal:
            journal.run_start(_metadata())
            for record in records:
                journal.case(record)
        start = time.perf_counter()
        load_result(journal_path(results, "rebuild"))
        out.append(
            BenchRow(
                "store",
                "rebuild from journal, 100k records",
                time.perf_counter() - start,
                "s",
            )
        )
        plain = len(encode_artifact(artifact, encoding="plain").encode())
        compact = target.stat().st_size
        out.append(
            BenchRow("store", "history size plain, 100k records", plain / 1e6, "MB")
        )
        out.append(
            BenchRow(
                "store",
                "history size compact, 100k records",
                compact / 1e6,
                "MB",
                f"{plain / compact:.1f}x smaller",
            )
        )
    return out
