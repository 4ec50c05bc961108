"""One file per crash, timeout or hang: ``<key>_crashes/<safe case id>.json``.

The runner's controller calls `write_crash_record` with what it knows (contracts:
crash records). The payload is checked, scrubbed of host identity and written
atomically, so a reviewer can read it on any machine and a crash mid-write leaves the
previous record whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ArtifactError,
    CrashRecord,
    HostIdentity,
    ResultsLayout,
    scrub_value,
    write_atomic,
)

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-")
_MAX_NAME = 180


def crash_dir(results_dir: Path, run_key: str) -> Path:
    """``<results>/<key>_crashes``."""
    return ResultsLayout(results_dir, run_key).crashes_dir


def safe_case_name(case_id: str) -> str:
    """A file-name form of a case id that never collides: ``/`` -> ``~``, any other
    character outside ``[A-Za-z0-9_.+-]`` -> ``%XX``; very long ids keep a hash."""
    parts = []
    for char in case_id:
        if char in _SAFE:
            parts.append(char)
        elif char == "/":
            parts.append("~")
        else:
            parts.append("".join(f"%{b:02X}" for b in char.encode("utf-8")))
    name = "".join(parts).lstrip(".") or "%2E"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:16]
        name = name[: _MAX_NAME - 17] + "-" + digest
    return name


def crash_record_path(results_dir: Path, run_key: str, case_id: str) -> Path:
    """Where the crash record of ``case_id`` lives."""
    return crash_dir(results_dir, run_key) / f"{safe_case_name(case_id)}.json"


def write_crash_record(
    results_dir: Path, run_key: str, record: CrashRecord | dict[str, Any]
) -> Path:
    """Check, scrub and atomically write one crash record; returns its path.

    A dict is checked as a `CrashRecord` first (``case_id`` and ``crash`` required;
    missing optional keys are written as null, lists as []), so every file has the
    same shape. A second crash of the same case in the same run replaces the first:
    the record describes the latest run.
    """
    if not isinstance(record, CrashRecord):
        record = CrashRecord.from_dict(record, run_key)
    body = record.to_dict()
    body["run_key"] = run_key
    identity = HostIdentity.current(roots=[os.getcwd()])
    clean = scrub_value(json.loads(json.dumps(body, default=str)), identity)
    clean["case_id"], clean["node_id"] = body["case_id"], body["node_id"]
    clean["run_key"] = run_key
    path = crash_record_path(Path(results_dir), run_key, record.case_id)
    text = json.dumps(clean, indent=1, ensure_ascii=False, default=str)
    write_atomic(path, text + "\n")
    return path


def read_crash_record(path: Path) -> dict[str, Any]:
    """Load a crash record back; a bad file raises `ArtifactError` naming it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(path, f"unreadable crash record ({exc})") from None
    if not isinstance(data, dict) or "case_id" not in data or "crash" not in data:
        raise ArtifactError(path, "crash record lacks case_id or crash")
    try:
        CrashRecord.from_dict(data)
    except ArtifactError as exc:
        raise ArtifactError(path, exc.problem) from None
    return data
