"""Read only what adaptive isolation needs from results: crashed records, fast.

A full OpInfo run holds tens of thousands of records, most of them ``not_run``;
building every `CaseRecord` of ten history files would cost every run (and every xdist
worker) seconds. These readers skip what cannot hold a crash: a history whose counts
say no case crashed is not decoded, the ``not_run`` block never is, and a journal's
lines go through the schema's one line parser (`JournalLines`), so a corrupt line is
refused as every reader refuses it, but a record is built only for a crashed case.
What they do decode goes through the schema's own decoder, so the records are exact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ArtifactError,
    CaseRecord,
    JournalLines,
    Status,
    decode_artifact,
    resolve_reference,
)

_EMPTY_COMPACT = {"count": 0, "columns": {}}


@dataclass
class Scan:
    """What one results file says about crashes."""

    path: Path
    torch_version: str | None = None
    started_at: str | None = None
    crashed: list[CaseRecord] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)  # node ids a user stopped
    recorded: set[str] = field(default_factory=set)  # case ids of the case lines

    def has_record(self, case_id: str) -> bool:
        """Whether the journal holds any record of ``case_id`` (a case line: the
        journal is read line by line, never held whole)."""
        return case_id in self.recorded


def scan_artifact(path: Path) -> Scan:
    """A history artifact or ``<key>_latest.json`` (references are followed)."""
    target = resolve_reference(path)
    data = _json(target)
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        raise ArtifactError(target, "not a TorchCTS result (no metadata)")
    meta = data["metadata"]
    scan = Scan(target, _text(meta.get("torch_version")), _text(meta.get("started_at")))
    counts = meta.get("counts")
    if isinstance(counts, dict) and counts.get(Status.CRASHED.value) == 0:
        return scan  # the run says no case crashed: nothing to decode
    light = dict(data)
    light["not_run"] = _EMPTY_COMPACT if data.get("encoding") == "compact" else []
    artifact = decode_artifact(light, str(target))
    scan.crashed = [r for r in artifact.results if r.status is Status.CRASHED]
    return scan


def scan_journal(path: Path) -> Scan:
    """A journal (current or set aside). A torn last line is passed over; a corrupt
    one before it raises `ArtifactError` naming the line, as every reader does."""
    scan = Scan(path)
    for _number, item in JournalLines(path):
        try:
            _apply(scan, item)
        except (ValueError, KeyError, TypeError, AttributeError, ArtifactError):
            continue  # a line of the right shape with a field it cannot use
    return scan


def _apply(scan: Scan, item: dict[str, Any]) -> None:
    kind = item["type"]
    if kind in ("run_start", "run_end"):
        meta = item["metadata"]
        scan.torch_version = _text(meta.get("torch_version"))
        scan.started_at = _text(meta.get("started_at"))
    elif kind == "diagnostic" and item.get("name") == "interrupted_in_flight":
        scan.interrupted = [str(n) for n in item.get("value") or []]
    elif kind == "case":
        record = item["record"]
        scan.recorded.add(str(record["case_id"]))
        if record.get("status") == Status.CRASHED.value:
            # the bulk, finished cases that did not crash, is never built into records
            scan.crashed.append(CaseRecord.from_dict(record))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ArtifactError(path, f"cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(path, f"not valid JSON ({exc})") from None
    except RecursionError:
        raise ArtifactError(path, "not valid JSON (nested too deeply)") from None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
