"""Synthetic results directories, written with the schema's own writers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    JournalWriter,
    NotRunReason,
    RunArtifact,
    RunMetadata,
    Status,
    journal_path,
    make_case_id,
    manifest_digest,
    node_id_for_case,
    write_history,
)

RUN_KEY = "simdev_x86-64-2cpu-24gb"
MANIFEST = '''"""simdev example manifest."""
DEVICE = "simdev"
BACKEND_NAME = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
'''
CRASH_CASE = make_case_id("opinfo", "mul", "forward", "float32", 0)
# where the runner's crash file of CRASH_CASE lives, relative to results/
CRASH_EVIDENCE = f"{RUN_KEY}_crashes/opinfo~mul~forward~float32~0.json"
SEGV_SCRIPT = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"


def record(
    op: str = "add", status: Status = Status.PASSED, sample: int = 0, **kw: object
) -> CaseRecord:
    """A case record with canonical ids."""
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
    fields.update(kw)
    return CaseRecord(**fields)  # type: ignore[arg-type]


def default_records() -> list[CaseRecord]:
    """Passed, failed, crashed and not_run records."""
    return [
        record("add"),
        record("sub", Status.FAILED, mismatch="values differ at index 0"),
        record(
            "mul",
            Status.CRASHED,
            crash=CrashInfo(
                CrashKind.SIGNAL,
                signal="SIGSEGV",
                exit_code=-11,
                evidence=CRASH_EVIDENCE,
            ),
        ),
        record(
            "div",
            Status.NOT_RUN,
            expected_source=None,
            not_run_reason=NotRunReason.DTYPE_NOT_SUPPORTED,
        ),
    ]


@dataclass
class Project:
    """A project root with a manifest and a results directory holding one run."""

    root: Path
    results: Path
    manifest: Path


def make_project(
    root: Path,
    *,
    records: list[CaseRecord] | None = None,
    manifest_text: str = MANIFEST,
    command: str | None = None,
    completed: bool = True,
    extras: bool = True,
    message: str = "",
    earlier: list[CaseRecord] | None = None,
) -> Project:
    """Write manifest, journal, canonical history, report, runlog, diagnostics.

    The journal is written as the runner writes it: not_run records in one
    case_block line, then a line per executed case. `earlier`: the records of a
    first attempt that was interrupted and resumed; their lines come first, and a
    later line for the same case replaces its earlier one.
    """
    manifests = root / "manifests"
    manifests.mkdir(parents=True, exist_ok=True)
    manifest = manifests / "simdev.py"
    manifest.write_text(manifest_text, encoding="utf-8")
    results = root / "results"
    results.mkdir(exist_ok=True)
    meta = RunMetadata(
        run_key=RUN_KEY,
        device="simdev",
        hardware_key="x86-64-2cpu-24gb",
        backend="simdev",
        os="Linux-6.1-x86_64",
        python="3.11.7",
        torch_version="2.13.0+cpu",
        torchcts_version="0.1.0",
        manifest_digest=manifest_digest(manifest),
        command=command or "torchcts-run --manifest manifests/simdev.py",
        started_at="2026-11-30T01:00:00Z",
        ended_at="2026-11-30T01:02:03Z" if completed else None,
        completed_normally=completed,
    )
    recs = default_records() if records is None else records
    if message:
        recs = [
            CaseRecord.from_dict({**r.to_dict(), "exception_message": message})
            for r in recs
        ]
    with JournalWriter(journal_path(results, RUN_KEY)) as journal:
        journal.run_start(meta)
        if earlier is not None:
            for rec in earlier:
                journal.case(rec)
            journal.run_start(meta, resumed=True)
        journal.case_block([r for r in recs if r.status is Status.NOT_RUN])
        for rec in recs:
            if rec.status is not Status.NOT_RUN:
                journal.case(rec)
        if completed:
            journal.run_end(meta)
    if completed:
        write_history(results, RUN_KEY, RunArtifact.from_records(meta, recs))
    if extras:
        (results / f"{RUN_KEY}.md").write_text(f"# simdev\n{message}\n")
        (results / f"{RUN_KEY}_runlog.txt").write_text(
            f"start {CRASH_CASE}\n{message}\n"
        )
        (results / "coverage").mkdir(exist_ok=True)
        (results / "coverage" / "summary.json").write_text('{"ops": 4}\n')
        (results / f"{RUN_KEY}_opinfo_oracle_failures_123.jsonl").write_text(
            '{"case_id": "opinfo/div/forward/float32/0"}\n'
        )
        write_crash_record(results, message=message)
    return Project(root, results, manifest)


def write_crash_record(
    results: Path, *, message: str = "", script: str | None = SEGV_SCRIPT
) -> Path:
    """A crash record shaped like the runner's (contracts: crash records)."""
    crashes = results / f"{RUN_KEY}_crashes"
    crashes.mkdir(exist_ok=True)
    payload = {
        "format": "torchcts-crash-record",
        "version": 1,
        "case_id": CRASH_CASE,
        "node_id": node_id_for_case(CRASH_CASE),
        "run_key": RUN_KEY,
        "crash": {"kind": "signal", "signal": "SIGSEGV", "exit_code": -11},
        "runlog_tail": [f"start {CRASH_CASE}", message],
        "stderr_tail": f"Fatal Python error: Segmentation fault {message}",
        "traceback": None,
        "environment": {
            "os": "Linux-6.1-x86_64",
            "python": "3.11.7",
            "torch_version": "2.13.0+cpu",
            "torchcts_version": "0.1.0",
            "backend": "simdev",
            "hardware_key": "x86-64-2cpu-24gb",
            "device": "simdev",
        },
        "repro_command": ["torchcts-run", "--manifest", "manifests/simdev.py"],
        "repro_script": script,
    }
    path = crashes / "opinfo~mul~forward~float32~0.json"
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return path
