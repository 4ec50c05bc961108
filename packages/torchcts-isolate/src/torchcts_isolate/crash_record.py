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
    CrashInfo,
    HostIdentity,
    node_id_for_case,
    scrub_value,
    write_atomic,
)

CRASH_RECORD_FORMAT = "torchcts-crash-record"
CRASH_RECORD_VERSION = 1
PAYLOAD_KEYS = (
    "case_id", "node_id", "run_key", "crash", "runlog_tail", "stderr_tail",
    "traceback", "environment", "repro_command", "repro_script",
)  # fmt: skip
ENVIRONMENT_KEYS = (
    "os", "python", "torch_version", "torchcts_version", "backend", "hardware_key",
    "device",
)  # fmt: skip
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-")
_MAX_NAME = 180


def crash_dir(results_dir: Path, run_key: str) -> Path:
    """``<results>/<key>_crashes``."""
    return Path(results_dir) / f"{run_key}_crashes"


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
    results_dir: Path, run_key: str, payload: dict[str, Any]
) -> Path:
    """Check, scrub and atomically write one crash record; returns its path.

    Required: ``case_id`` and ``crash`` (a `CrashInfo` dict). Missing optional keys
    are written as null (lists as []), so every record has the same shape. Keys
    beyond the contract's are kept (scrubbed too). A second crash of the same case
    in the same run replaces the first: the record describes the latest run.
    """
    record = _checked(payload, run_key)
    identity = HostIdentity.current(roots=[os.getcwd()])
    clean = scrub_value(json.loads(json.dumps(record, default=str)), identity)
    clean["case_id"], clean["node_id"] = record["case_id"], record["node_id"]
    clean["run_key"] = run_key
    path = crash_record_path(Path(results_dir), run_key, record["case_id"])
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
        CrashInfo.from_dict(data["crash"])
    except ArtifactError as exc:
        raise ArtifactError(path, exc.problem) from None
    return data


def _checked(payload: dict[str, Any], run_key: str) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ArtifactError(None, "crash record payload must be a dict")
    case_id = payload.get("case_id")
    if not isinstance(case_id, str) or not case_id:
        raise ArtifactError(None, "crash record payload lacks 'case_id'")
    crash = payload.get("crash")
    if isinstance(crash, CrashInfo):
        crash = crash.to_dict()
    if not isinstance(crash, dict):
        raise ArtifactError(None, f"crash record of {case_id}: 'crash' must be a dict")
    try:
        CrashInfo.from_dict(crash)
    except ArtifactError as exc:
        raise ArtifactError(None, f"crash record of {case_id}: {exc.problem}") from None
    record: dict[str, Any] = {
        "format": CRASH_RECORD_FORMAT,
        "version": CRASH_RECORD_VERSION,
    }
    for key in PAYLOAD_KEYS:
        record[key] = payload.get(key)
    record.update({k: v for k, v in payload.items() if k not in record})
    record["crash"] = dict(crash)
    record["node_id"] = payload.get("node_id") or node_id_for_case(case_id)
    record["run_key"] = run_key
    for key in ("runlog_tail", "repro_command"):
        value = record[key]
        if value is None:
            record[key] = []
        elif not isinstance(value, list | tuple):
            raise ArtifactError(
                None, f"crash record of {case_id}: '{key}' must be a list"
            )
    env = {} if record["environment"] is None else record["environment"]
    if not isinstance(env, dict):
        raise ArtifactError(
            None, f"crash record of {case_id}: 'environment' must be a dict"
        )
    record["environment"] = {**{k: env.get(k) for k in ENVIRONMENT_KEYS}, **env}
    return record
