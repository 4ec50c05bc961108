"""The human report at the end of a run: torchcts_report when installed, else minimal.

The contract: run ``python -m torchcts_report render --results <results dir> --run-key
<key> [--junit-all]`` as a subprocess (files, never imports); without it, or when it
fails, write a minimal ``<key>.md`` from the canonical artifact so a finished run always
has a report. `start_report` starts the renderer and returns at once, so the run's
end can do other work (the coverage refresh) on the other core; `finish_report` waits.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from torchcts_schema import (
    MARKDOWN_SUFFIX,
    STATUS_MEANINGS,
    ResultsLayout,
    RunArtifact,
    Status,
    count_statuses,
    write_atomic,
)

LISTED = 200  # cases listed in the minimal report; the artifact has them all


def report_path(results_dir: Path, run_key: str) -> Path:
    """``<key>.md``."""
    return ResultsLayout(results_dir, run_key).report(MARKDOWN_SUFFIX)


def _renderer_available() -> bool:
    try:
        return importlib.util.find_spec("torchcts_report.__main__") is not None
    except (ImportError, ValueError):
        return False


RENDER_TIMEOUT_S = 600


@dataclass
class ReportJob:
    """A report being rendered: the renderer's process, or why there is none."""

    target: Path
    artifact: RunArtifact
    process: subprocess.Popen[str] | None
    note: str = ""  # why the minimal report is written instead (no process)


def start_report(
    results_dir: Path, run_key: str, artifact: RunArtifact, *, junit_all: bool = False
) -> ReportJob:
    """Start rendering the report; `finish_report` waits for it.

    `junit_all` lists every not_run case in the JUnit XML (``render --junit-all``).
    """
    target = report_path(results_dir, run_key)
    if not _renderer_available():
        note = "torchcts_report is not installed; wrote the minimal report"
        return ReportJob(target, artifact, None, note)
    command = [
        sys.executable,
        "-m",
        "torchcts_report",
        "render",
        "--results",
        str(results_dir),
        "--run-key",
        run_key,
        *(["--junit-all"] if junit_all else []),
    ]
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as exc:
        note = f"torchcts_report could not run ({exc}); wrote the minimal report"
        return ReportJob(target, artifact, None, note)
    return ReportJob(target, artifact, process)


def finish_report(job: ReportJob) -> tuple[Path, str]:
    """Wait for the renderer; returns the report's path and a note on how it was
    made (the minimal report when the renderer failed, timed out or never ran)."""
    note = job.note
    if job.process is not None:
        try:
            stdout, stderr = job.process.communicate(timeout=RENDER_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            job.process.kill()
            job.process.communicate()
            note = f"torchcts_report could not run ({exc}); wrote the minimal report"
        else:
            code = job.process.returncode
            if code == 0 and job.target.exists():
                return job.target, "rendered by torchcts_report"
            tail = (stderr or stdout).strip().splitlines()[-1:] or [""]
            note = (
                f"torchcts_report render failed (exit {code}: {tail[0]}); "
                "wrote the minimal report"
            )
    write_atomic(job.target, minimal_markdown(job.artifact))
    return job.target, note


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:160]


def minimal_markdown(artifact: RunArtifact) -> str:
    """A small scorecard: metadata, counts per status, and the cases that need work."""
    meta = artifact.metadata
    counts = count_statuses(artifact.records)
    lines = [
        f"# TorchCTS result: {meta.run_key}",
        "",
        f"Backend {meta.backend} on {meta.device} ({meta.hardware_key}); PyTorch "
        f"{meta.torch_version}, Python {meta.python}, {meta.os}; TorchCTS "
        f"{meta.torchcts_version}.",
        f"Completed normally: {'yes' if meta.completed_normally else 'no'}. "
        f"Command: `{meta.command}`.",
        "",
        "| status | count | meaning |",
        "|---|---:|---|",
    ]
    for status in Status:
        lines.append(
            f"| {status.value} | {counts[status.value]} | {STATUS_MEANINGS[status]} |"
        )
    needs_work = [r for r in artifact.results if r.status is not Status.PASSED]
    if needs_work:
        lines += [
            "",
            "## Cases that need work",
            "",
            "| case | status | detail |",
            "|---|---|---|",
        ]
        for record in needs_work[:LISTED]:
            why = record.mismatch or record.exception_message or record.detail or ""
            if record.crash is not None:
                why = f"{record.crash.kind.value} {record.crash.signal or ''} {why}"
            lines.append(
                f"| `{record.case_id}` | {record.status.value} | {_cell(why)} |"
            )
        if len(needs_work) > LISTED:
            lines.append(f"\n{len(needs_work) - LISTED} more in the result artifact.")
    lines += [
        "",
        "The resolved result artifact (`"
        f"{ResultsLayout(Path('.'), meta.run_key).latest.name}`) is the source of "
        "truth; this page summarises it.",
        "",
    ]
    return "\n".join(lines)


__all__ = [
    "ReportJob",
    "finish_report",
    "minimal_markdown",
    "report_path",
    "start_report",
]
