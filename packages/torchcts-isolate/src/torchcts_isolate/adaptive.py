"""Adaptive isolation: cases that took a process down before run isolated next time.

Evidence comes from earlier results of the same run key and PyTorch minor family:
crashed records in the history artifacts, the latest result (journal included) and a
journal a fresh run set aside (``<key>_journal.jsonl.prev``, with
``<key>_runlog.txt.prev`` when the runner keeps it),
crash records in ``<key>_crashes/``, and the runlog's last start of each worker that
has no record (the case that was running when the process died; a user interrupt,
which the runner lists as ``interrupted_in_flight``, is not evidence). Each decision is
written with its evidence to ``<key>_adaptive_isolation.json``, so a reviewer can see
why a case ran isolated. Unreadable files are listed there too, never fatal. The
files are read with `torchcts_isolate.scan`, which decodes only crashed records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ArtifactError,
    ResultsLayout,
    case_id_for_node,
    torch_minor_family,
    write_atomic,
)

from torchcts_isolate.scan import Scan, scan_artifact, scan_journal

ADAPTIVE_FORMAT = "torchcts-adaptive-isolation"
ADAPTIVE_VERSION = 1
HISTORY_LIMIT = 10  # most recent history artifacts considered


@dataclass
class AdaptiveDecisions:
    """Which cases to isolate and why, plus what could not be read."""

    run_key: str
    torch_family: str | None
    cases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    runs_seen: set[str] = field(default_factory=set)  # started_at of runs read

    def isolate(self, case_id: str) -> bool:
        """Whether earlier evidence says this case should run isolated."""
        return case_id in self.cases

    def add(self, case_id: str, evidence: dict[str, Any]) -> None:
        """Record one piece of evidence (duplicates kept once)."""
        items = self.cases.setdefault(case_id, [])
        if evidence not in items:
            items.append(evidence)

    def to_dict(self) -> dict[str, Any]:
        """The JSON written to ``<key>_adaptive_isolation.json`` (sorted, stable)."""
        return {
            "format": ADAPTIVE_FORMAT,
            "version": ADAPTIVE_VERSION,
            "run_key": self.run_key,
            "torch_family": self.torch_family,
            "decisions": [
                {"case_id": case, "isolate": True, "evidence": self.cases[case]}
                for case in sorted(self.cases)
            ],
            "sources": sorted(set(self.sources)),
            "skipped": self.skipped,
        }


def adaptive_path(results_dir: Path, run_key: str) -> Path:
    """``<results>/<key>_adaptive_isolation.json``."""
    return ResultsLayout(results_dir, run_key).adaptive_decisions


def decide_adaptive(
    results_dir: Path,
    run_key: str,
    torch_version: str | None,
    *,
    history_limit: int = HISTORY_LIMIT,
    crash_records_of: Sequence[Path] = (),
) -> AdaptiveDecisions:
    """Collect the evidence for ``run_key`` under ``torch_version``'s minor family.

    A missing results directory simply yields no decisions. The crash records of the
    `crash_records_of` results directories count too: a subset run in its own folder
    still isolates what crashed in the full run (their records are small files, so
    this costs no artifact parsing).
    """
    results_dir = Path(results_dir)
    family = torch_minor_family(torch_version) if torch_version else None
    decisions = AdaptiveDecisions(run_key, _family_text(family))
    for other in crash_records_of:
        if Path(other).is_dir():
            _from_crash_records(decisions, ResultsLayout(Path(other), run_key), family)
    if not results_dir.is_dir():
        return decisions
    layout = ResultsLayout(results_dir, run_key)
    histories = layout.glob("history")
    for path in histories[-history_limit:] if history_limit > 0 else []:
        _from_scan(decisions, results_dir, family, scan_artifact, path)
    previous = layout.journal_prev
    if previous.is_file():  # an unfinished run a fresh run set aside
        prior = _from_scan(decisions, results_dir, family, scan_journal, previous)
        if prior is not None and _same_family(prior.torch_version, family):
            _from_runlog(decisions, results_dir, layout.runlog_prev, prior)
    current = None
    if layout.journal.is_file():
        current = _from_scan(
            decisions, results_dir, family, scan_journal, layout.journal
        )
    elif layout.latest.is_file():
        _from_scan(decisions, results_dir, family, scan_artifact, layout.latest)
    _from_crash_records(decisions, layout, family)
    if current is not None and _same_family(current.torch_version, family):
        _from_runlog(decisions, results_dir, layout.runlog, current)
    return decisions


def write_adaptive_decisions(results_dir: Path, decisions: AdaptiveDecisions) -> Path:
    """Write the decisions atomically; returns the path."""
    path = adaptive_path(results_dir, decisions.run_key)
    write_atomic(path, json.dumps(decisions.to_dict(), indent=1) + "\n")
    return path


def _family_text(family: tuple[int, int] | None) -> str | None:
    return f"{family[0]}.{family[1]}" if family else None


def _same_family(version: Any, family: tuple[int, int] | None) -> bool:
    """Unknown on either side counts as the same: evidence only moves cases."""
    if family is None or not isinstance(version, str):
        return True
    other = torch_minor_family(version)
    return other is None or other == family


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _from_scan(
    decisions: AdaptiveDecisions,
    root: Path,
    family: tuple[int, int] | None,
    reader: Callable[[Path], Scan],
    path: Path,
) -> Scan | None:
    """Crashed records of one results file become evidence (same family only)."""
    try:
        scan = reader(path)
    except (ArtifactError, OSError, ValueError) as exc:
        problem = exc.problem if isinstance(exc, ArtifactError) else str(exc)
        decisions.skipped.append({"source": _rel(path, root), "why": problem[:300]})
        return None
    source = _rel(scan.path, root)
    if scan.started_at is not None and reader is scan_artifact:
        if scan.started_at in decisions.runs_seen:
            return scan  # latest refers to a history artifact already read
        decisions.runs_seen.add(scan.started_at)
    if not _same_family(scan.torch_version, family):
        why = f"torch {scan.torch_version} is another minor family"
        decisions.skipped.append({"source": source, "why": why})
        return scan
    decisions.sources.append(source)
    for record in scan.crashed:
        crash = record.crash
        decisions.add(
            record.case_id,
            {
                "source": source,
                "evidence": "crashed",
                "crash_kind": crash.kind.value if crash else None,
                "signal": crash.signal if crash else None,
                "run_started_at": scan.started_at,
            },
        )
    return scan


def _from_crash_records(
    decisions: AdaptiveDecisions,
    layout: ResultsLayout,
    family: tuple[int, int] | None,
) -> None:
    root = layout.results_dir
    for path in layout.glob("crashes"):
        source = _rel(path, root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            case_id = data["case_id"]
            crash = data.get("crash") or {}
            version = (data.get("environment") or {}).get("torch_version")
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,  # JSON nested past the parser's depth
        ) as exc:
            why = f"unreadable ({exc})"[:300]
            decisions.skipped.append({"source": source, "why": why})
            continue
        if not isinstance(case_id, str):
            decisions.skipped.append({"source": source, "why": "case_id not a string"})
            continue
        if not _same_family(version, family):
            decisions.skipped.append(
                {"source": source, "why": f"torch {version} is another minor family"}
            )
            continue
        decisions.sources.append(source)
        decisions.add(
            case_id,
            {
                "source": source,
                "evidence": "crash_record",
                "crash_kind": crash.get("kind"),
                "signal": crash.get("signal"),
            },
        )


def _from_runlog(
    decisions: AdaptiveDecisions, root: Path, path: Path, current: Scan
) -> None:
    """Per worker, the last start in the runlog without a record in the journal."""
    last: dict[str, tuple[int, str]] = {}
    try:
        text = path.read_bytes().decode("ascii", "replace")
    except OSError:
        return
    for raw in text.splitlines():
        parts = raw.strip().split(" ", 3)
        if len(parts) == 4 and parts[0].isdigit():
            seq, worker, node = int(parts[0]), parts[2], parts[3]
            if worker not in last or last[worker][0] < seq:
                last[worker] = (seq, node)
    source = _rel(path, root)
    for worker, (_seq, node) in sorted(last.items()):
        case_id = case_id_for_node(node)
        if case_id is None or node in current.interrupted:
            continue
        if not current.has_record(case_id):
            decisions.sources.append(source)
            decisions.add(
                case_id,
                {
                    "source": source,
                    "evidence": "last_start_without_record",
                    "worker": worker,
                },
            )
