"""The work after the last case: each record converted once, the report rendered
beside the coverage refresh, and a failed renderer still leaving a report."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torchcts_runner.report as report_module
from torchcts_runner.report import ReportJob, finish_report, start_report
from torchcts_runner.run_writer import RunWriter
from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    RunArtifact,
    RunMetadata,
    Status,
    ToleranceSource,
    ToleranceUsed,
    codec,
    load_result,
    make_case_id,
    node_id_for_case,
    shared_codec,
)

KEY = "cpu_x86-64-2cpu-24gb"


def _metadata() -> RunMetadata:
    return RunMetadata(
        run_key=KEY,
        device="cpu",
        hardware_key="x86-64-2cpu-24gb",
        backend="cpu",
        os="Linux",
        python="3.11.7",
        torch_version="2.13.0",
        torchcts_version="0.1.0",
        manifest_digest="sha256:00",
        command="torchcts-run --manifest manifests/cpu.py",
        started_at="2026-12-03T00:00:00Z",
    )


def _records(count: int) -> list[CaseRecord]:
    """Judged records as a level-4 run has them: a tolerance each, and surface
    lists that repeat over many cases."""
    records = []
    for i in range(count):
        case_id = make_case_id("opinfo", f"op{i % 30}", "forward", "float32", i)
        records.append(
            CaseRecord(
                case_id=case_id,
                node_id=node_id_for_case(case_id),
                op=f"op{i % 30}",
                variant="forward",
                dtype="float32",
                sample=i,
                level=4,
                status=Status.PASSED,
                expected_source=ExpectedSource.CPU_REFERENCE,
                duration_s=0.001 * i,
                worker=f"gw{i % 2}",
                extra={"surfaces": [f"aten::op{i % 30}.out", "aten::_to_copy"]},
                tolerance=ToleranceUsed(
                    ("float32", "float64", "bfloat16")[i % 3],
                    1e-5,
                    1.3e-6,
                    ToleranceSource.DEFAULT_TABLE,
                ),
            )
        )
    return records


def _writer(results: Path, records: list[CaseRecord]) -> RunWriter:
    writer = RunWriter(results, _metadata(), snapshot_interval_s=3600.0)
    writer.open(None)
    for record in records:
        writer.record(record)
    return writer


def _counting(
    monkeypatch: pytest.MonkeyPatch, calls: Counter[str], owner: Any, name: str
) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("count", [150, 300])
def test_the_end_of_a_run_converts_each_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Each record's shared values (surfaces, tolerance) are keyed once, as it is
    journaled; from the last case to the written history and report none is keyed
    again, each tolerance is converted once, no record becomes a dict of its own
    and each block is encoded once. Every count is linear in the records."""
    monkeypatch.setattr(report_module, "_renderer_available", lambda: False)
    calls: Counter[str] = Counter()
    _counting(monkeypatch, calls, shared_codec, "SHARED_KEY")
    records = _records(count)
    writer = _writer(tmp_path, records)
    assert calls == {"SHARED_KEY": 2 * count}  # during the case phase
    calls.clear()
    _counting(monkeypatch, calls, codec, "SHARED_KEY")
    _counting(monkeypatch, calls, CaseRecord, "to_dict")
    _counting(monkeypatch, calls, ToleranceUsed, "to_dict")
    _counting(monkeypatch, calls, codec, "encode_records")
    _counting(monkeypatch, calls, RunArtifact, "from_records")
    done = writer.finish([r.case_id for r in records], interrupted=False)
    assert done.complete and done.history is not None
    assert calls == {
        "to_dict": count,  # CaseRecord's own: none, ToleranceUsed's: one each
        "encode_records": 2,  # results and not_run, once
        "from_records": 1,
    }
    assert load_result(tmp_path).results == records


def test_the_coverage_refresh_runs_while_the_report_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`meanwhile` runs once, told the run is complete, while the renderer's
    process is still running; the report it renders is the run's."""
    records = _records(40)
    writer = _writer(tmp_path, records)
    jobs: list[ReportJob] = []

    def started(*args: Any, **kwargs: Any) -> ReportJob:
        jobs.append(start_report(*args, **kwargs))
        return jobs[-1]

    monkeypatch.setattr("torchcts_runner.run_writer.start_report", started)
    seen: list[tuple[bool, int | None]] = []

    def meanwhile(complete: bool) -> None:
        (job,) = jobs
        assert job.process is not None
        seen.append((complete, job.process.poll()))

    done = writer.finish(
        [r.case_id for r in records], interrupted=False, meanwhile=meanwhile
    )
    assert seen == [(True, None)]  # the renderer had not ended yet
    assert done.report_note == "rendered by torchcts_report"
    assert KEY in done.reports[0].read_text(encoding="utf-8")


def test_a_failed_renderer_leaves_the_minimal_report(tmp_path: Path) -> None:
    """A renderer that exits 3 is named in the note, and the minimal report is
    written from the artifact in its place."""
    artifact = RunArtifact.from_records(_metadata(), _records(3))
    target = tmp_path / f"{KEY}.md"
    failing = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('no such run'); sys.exit(3)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    path, note = finish_report(ReportJob(target, artifact, failing))
    assert path == target
    assert note == (
        "torchcts_report render failed (exit 3: no such run); wrote the minimal report"
    )
    assert "| passed | 3 |" in target.read_text(encoding="utf-8")


def test_a_run_without_the_renderer_gets_the_minimal_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without torchcts_report the minimal report is written, and the note says so."""
    monkeypatch.setattr(report_module, "_renderer_available", lambda: False)
    artifact = RunArtifact.from_records(_metadata(), _records(2))
    job = start_report(tmp_path, KEY, artifact)
    assert job.process is None
    path, note = finish_report(job)
    assert note == "torchcts_report is not installed; wrote the minimal report"
    assert path.read_text(encoding="utf-8").startswith(f"# TorchCTS result: {KEY}")
