"""What a report is rendered from: the resolved artifact plus the evidence files beside it.

The artifact comes only through the schema's loader. Probe failure files and crash
records are diagnostic side files; one that cannot be read is listed in the report as
unreadable (naming the file) instead of stopping the report, so a single damaged
record never hides the rest of a run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    CRASHES_SUFFIX,
    HISTORY_SUFFIX,
    SELECTIONS_DIR,
    ArtifactError,
    ResultsLayout,
    RunArtifact,
    find_latest,
    load_result,
    resolve_reference,
)

from torchcts_report.checks import check_artifact

_SAFE_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+\-]*$")
MAX_SIDE_FILE_BYTES = 8 * 1024 * 1024


@dataclass
class ReportInput:
    """One run's artifact and its evidence, as every renderer sees it."""

    artifact: RunArtifact
    run_key: str
    probe_failures: list[dict[str, Any]] = field(default_factory=list)
    oracle_failures: list[dict[str, Any]] = field(default_factory=list)
    crash_evidence: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    results_dir: Path | None = None  # where the artifact was found, as given

    @property
    def command_base(self) -> Path | None:
        """Where rerun commands run from: the directory holding the results dir
        (for a subset run's ``<results>/selections/<name>/``, the one holding
        ``<results>``)."""
        if self.results_dir is None:
            return None
        if self.results_dir.parent.name == SELECTIONS_DIR:
            return self.results_dir.parent.parent.parent
        return self.results_dir.parent


PASSING_PROBE = frozenset({"pass", "passed", "ok"})


def probe_rows(report: ReportInput) -> list[dict[str, Any]]:
    """Every probe row: the run's full table (diagnostics), then failure-file rows.

    The run's own order is kept (import first, then device, dtypes, capabilities); a
    row from a failure file that the table already holds is not repeated.
    """
    rows: list[dict[str, Any]] = []
    recorded = report.artifact.diagnostics.get("probes")
    if isinstance(recorded, dict) and isinstance(recorded.get("rows"), list):
        rows.extend(r for r in recorded["rows"] if isinstance(r, dict))
    seen = {_probe_identity(r) for r in rows}
    for row in report.probe_failures:
        if _probe_identity(row) not in seen:
            seen.add(_probe_identity(row))
            rows.append(row)
    return rows


def failing_probes(report: ReportInput) -> list[dict[str, Any]]:
    """The probe rows whose status is not a pass."""
    return [
        r
        for r in probe_rows(report)
        if str(r.get("status", "")).lower() not in PASSING_PROBE
    ]


def probe_counts(report: ReportInput) -> dict[str, Any]:
    """Pass/fail/total from the metadata, or from the diagnostics of a rebuilt run."""
    if report.artifact.metadata.probes:
        return dict(report.artifact.metadata.probes)
    recorded = report.artifact.diagnostics.get("probes")
    counts = recorded.get("counts") if isinstance(recorded, dict) else None
    return dict(counts) if isinstance(counts, dict) else {}


def _probe_identity(row: dict[str, Any]) -> tuple[str, ...]:
    # failure files add bookkeeping keys (a type tag); the four columns identify a row
    return tuple(str(row.get(c, "")) for c in ("kind", "probe", "status", "note"))


def results_dir_of(path: Path) -> Path:
    """The results directory an artifact path belongs to (history files sit one down)."""
    if path.is_dir():
        return path
    parent = path.parent
    if parent.name.endswith(HISTORY_SUFFIX):
        return parent.parent
    return parent


def load_input(path: Path | str, *, run_key: str | None = None) -> ReportInput:
    """Resolve `path` with the schema loader and gather the evidence files beside it."""
    path = Path(path)
    target = find_latest(path, run_key=run_key) if path.is_dir() else path
    try:
        artifact = load_result(target)
    except ArtifactError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as exc:
        # the loader should say this itself; until it always does, say it once here
        raise ArtifactError(
            target, f"malformed artifact ({type(exc).__name__}: {exc})"
        ) from None
    try:
        check_artifact(artifact, str(target))
    except ArtifactError as exc:
        raise ArtifactError(_artifact_file(target), exc.problem) from None
    key = run_key or artifact.metadata.run_key
    check_run_key(key, target)
    report = ReportInput(
        artifact=artifact, run_key=key, results_dir=results_dir_of(target)
    )
    gather_evidence(report, results_dir_of(target))
    return report


def _artifact_file(target: Path) -> Path:
    """The file that holds the data, past any reference (only needed for errors)."""
    if target.name.endswith(".json"):
        try:
            return resolve_reference(target)
        except ArtifactError:
            return target
    return target


def check_run_key(key: str, where: Path | str) -> None:
    """A run key becomes part of file names, so it must be a plain token."""
    if not _SAFE_KEY.match(key) or ".." in key:
        raise ArtifactError(
            where, f"run key {key!r} is not a plain token usable in a file name"
        )


def gather_evidence(report: ReportInput, results_dir: Path) -> None:
    """Read probe failure files and crash records of `report.run_key`, sorted by name."""
    layout = ResultsLayout(results_dir, report.run_key)
    for probe_file in layout.glob("probe_failures"):
        report.probe_failures.extend(_read_jsonl(probe_file, report))
    for oracle_file in layout.glob("oracle_failures"):
        report.oracle_failures.extend(_read_jsonl(oracle_file, report))
    crash_dir = layout.crashes_dir
    if crash_dir.is_dir():
        for record_file in layout.glob("crashes"):
            data = _read_json(record_file, report)
            if data is None:
                continue
            case_id = data.get("case_id")
            if not isinstance(case_id, str) or not case_id:
                _unreadable(report, record_file, "crash record has no 'case_id' string")
                continue
            data["_file"] = f"{crash_dir.name}/{record_file.name}"
            report.crash_evidence.append(data)


def _read_text(path: Path, report: ReportInput) -> str | None:
    try:
        if path.stat().st_size > MAX_SIDE_FILE_BYTES:
            _unreadable(report, path, f"larger than {MAX_SIDE_FILE_BYTES} bytes")
            return None
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        _unreadable(report, path, f"cannot read ({exc.strerror})")
    except UnicodeDecodeError:
        _unreadable(report, path, "not UTF-8 text")
    return None


def _read_json(path: Path, report: ReportInput) -> dict[str, Any] | None:
    text = _read_text(path, report)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        _unreadable(report, path, f"invalid JSON at line {exc.lineno}: {exc.msg}")
        return None
    if not isinstance(data, dict):
        _unreadable(report, path, "not a JSON object")
        return None
    return data


def _read_jsonl(path: Path, report: ReportInput) -> list[dict[str, Any]]:
    text = _read_text(path, report)
    rows: list[dict[str, Any]] = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            _unreadable(report, path, f"line {number} is not valid JSON ({exc.msg})")
            continue
        if not isinstance(row, dict):
            _unreadable(report, path, f"line {number} is not a JSON object")
            continue
        rows.append(row)
    return rows


def _unreadable(report: ReportInput, path: Path, problem: str) -> None:
    # the parent directory name is enough to find it; absolute paths are host identity
    crashes = path.parent.name.endswith(CRASHES_SUFFIX)
    name = f"{path.parent.name}/{path.name}" if crashes else path.name
    report.unreadable.append((name, problem))
