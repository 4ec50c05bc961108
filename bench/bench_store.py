"""Artifact store costs: journal append, snapshot, history write/load, compact size,
and the compact codec on a level-1 run's ~325,000 not_run records."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from run import BenchRow
from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    JournalWriter,
    NotRunReason,
    RunArtifact,
    RunMetadata,
    Status,
    default_next_fix,
    encode_artifact,
    journal_path,
    latest_path,
    load_result,
    make_case_id,
    node_id_for_case,
    write_history,
    write_snapshot,
)
from torchcts_schema.codec import decode_records, encode_records

N = 100_000
NOT_RUN = 325_000  # a level-1 run of a manifest that declares every dtype
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool", None]
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


def _not_run_records(n: int) -> list[CaseRecord]:
    """Records shaped like selection's: mostly level_filtered, samples of op groups."""
    out: list[CaseRecord] = []
    group = 0
    while len(out) < n:
        op, variant = f"op_{group % 900}", ["forward", "grad"][group % 2]
        dtype = DTYPES[group % len(DTYPES)]
        source = (
            ExpectedSource.PROPERTY if group % 9 == 0 else ExpectedSource.CPU_REFERENCE
        )
        for sample in range(min(12, n - len(out))):
            level = 2 + (sample + group) % 7
            reason, detail = (
                (NotRunReason.DTYPE_NOT_SUPPORTED, f"DTYPES[{dtype!r}] is False")
                if group % 20 == 0
                else (NotRunReason.LEVEL_FILTERED, f"level {level} > 1")
            )
            case_id = make_case_id("opinfo", op, variant, dtype, sample)
            out.append(
                CaseRecord(
                    case_id=case_id,
                    node_id=node_id_for_case(case_id),
                    op=op,
                    variant=variant,
                    dtype=dtype,
                    sample=sample,
                    level=level,
                    status=Status.NOT_RUN,
                    expected_source=source,
                    next_fix=default_next_fix(Status.NOT_RUN),
                    not_run_reason=reason,
                    detail=detail,
                )
            )
        group += 1
    return out


def _best_of(repeat: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _codec_rows() -> list[BenchRow]:
    """Encode and decode one level-1 not_run block, as the journal, snapshot and
    history each do; best of three, the machine being shared."""
    records = _not_run_records(NOT_RUN)
    block = json.loads(json.dumps(encode_records(records)))
    assert decode_records(block) == records
    encode_s = _best_of(3, lambda: encode_records(records))
    decode_s = _best_of(3, lambda: decode_records(block))
    note = "best of 3; record-at-a-time codec: 3.1-5.4 s encode, 5.3-8.6 s decode"
    run = _records(N)
    run_block = json.loads(json.dumps(encode_records(run)))
    assert decode_records(run_block) == run
    run_s = _best_of(3, lambda: decode_records(run_block))
    slots = (
        "best of 3; slot descriptors through starmap, const columns repeated: CPU"
        " time 0.93-0.98x (100k run records) and 0.98-1.00x (325k not_run) the"
        " exec twin, best of 9 interleaved (wall medians 0.87-1.09x), load 1.8-2.8"
    )
    return [
        BenchRow("store", "encode 325k not_run records", encode_s, "s", note),
        BenchRow("store", "decode 325k not_run records", decode_s, "s", note),
        BenchRow("store", "decode 100k run records", run_s, "s", slots),
    ]


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
    return out + _codec_rows()
