"""What a judged case adds to its record: the tolerance it was judged with, the
overloads that ran through the device's CPU fallback, what the verdict reports without
judging it (in the detail), and for a case that ran and did not pass, the facts
`torchcts-report explain` shows and a standalone repro script in ``<key>_repros/``
(and, where the case source can save it exactly, the sample a rerun replays instead of
rebuilding it: `saved_inputs_finder`).

Passed cases pay nothing beyond copying the verdict's tolerance and note: facts and
scripts are built only for failed, error and unsupported records. Evidence is extra: a
problem building it never changes the record's status, it is named in its detail.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from torchcts_isolate import safe_case_name
from torchcts_schema import (
    SELECTIONS_DIR,
    CaseRecord,
    HostIdentity,
    Manifest,
    ResultsLayout,
    Status,
    scrub_text,
    write_atomic,
)

# statuses of cases that executed and did not pass (crashes get theirs from the
# crash recorder, which knows when the process died)
EXPLAINED = frozenset((Status.FAILED, Status.ERROR, Status.UNSUPPORTED))
NOTE_LIMIT = 500  # a record's detail is one readable paragraph, not a log
_NOTHING: Any = object()


@dataclass
class Judging:
    """What one execution left for its evidence, filled as the case goes."""

    prepared: Any = None
    expected: Any = _NOTHING
    observed: Any = _NOTHING  # the result, or the exception the device raised
    verdict: Any = None
    cpu_fallback: tuple[str, ...] = ()  # overloads that ran through a CPU fallback

    @property
    def reached_device(self) -> bool:
        """Whether the case ran on the device (it returned or raised there)."""
        return self.observed is not _NOTHING


@cache
def _identity() -> HostIdentity:
    return HostIdentity.current(roots=[os.getcwd()])


def write_repro(results_dir: Path, run_key: str, case_id: str, script: str) -> str:
    """Scrub and atomically write `script` for `case_id`; its path relative to
    `results_dir` (what records carry)."""
    layout = ResultsLayout(results_dir, run_key)
    path = layout.repro_script(safe_case_name(case_id))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, scrub_text(script, _identity()), fsync=False)
    return path.relative_to(layout.results_dir).as_posix()


def write_saved_inputs(results_dir: Path, run_key: str, prepared: Any) -> None:
    """The prepared case's saved inputs beside its repro, when it can save them."""
    make = getattr(prepared, "saved_inputs", None)
    data = make() if make is not None else None
    if data:
        path = ResultsLayout(results_dir, run_key).repro_inputs(
            safe_case_name(prepared.spec.case_id)
        )
        write_atomic(path, data, fsync=False)


def saved_inputs_finder(
    results_dir: Path, results_root: Path, run_key: str
) -> Callable[[str], Path | None]:
    """case id -> the saved inputs of its latest non-passed run, wherever it ran:
    this run's folder, the full run's, then every selection folder under it."""

    def find(case_id: str) -> Path | None:
        stem = safe_case_name(case_id)
        for folder in _folders():
            path = ResultsLayout(folder, run_key).repro_inputs(stem)
            if path.is_file():
                return path
        return None

    @cache
    def _folders() -> list[Path]:
        folders = [results_dir, results_root]
        selections = results_root / SELECTIONS_DIR
        if selections.is_dir():
            folders += sorted(p for p in selections.iterdir() if p.is_dir())
        return list(dict.fromkeys(folders))

    return find


def repro_script(prepared: Any, manifest: Manifest, device: str) -> str | None:
    """The prepared case's standalone script, or None when it cannot build one."""
    make = getattr(prepared, "repro_source", None)
    if make is None:
        return None
    return str(make(device, manifest.backend_import, dict(manifest.backend_options)))


def with_judging_evidence(
    record: CaseRecord,
    judging: Judging,
    *,
    manifest: Manifest,
    device: str,
    results_dir: Path,
    run_key: str,
) -> CaseRecord:
    """`record` with its tolerance, CPU-fallback overloads and the verdict's note
    (reported, not judged), and its facts and repro when it did not pass."""
    tolerance = getattr(judging.verdict, "tolerance", None)
    if tolerance is not None:
        record = replace(record, tolerance=tolerance)
    if judging.cpu_fallback:
        record = replace(record, cpu_fallback=judging.cpu_fallback)
    note = getattr(judging.verdict, "note", None)
    if note:
        joined = f"{record.detail}; {note}" if record.detail else note
        record = replace(record, detail=joined[:NOTE_LIMIT])
    if record.status not in EXPLAINED or judging.prepared is None:
        return record
    problems = []
    facts = None
    make_facts = getattr(judging.prepared, "facts", None)
    if make_facts is not None and judging.expected is not _NOTHING:
        observed = None if judging.observed is _NOTHING else judging.observed
        try:
            meta = device == "meta"
            facts = dict(make_facts(judging.expected, observed, metadata_only=meta))
        except Exception as exc:
            problems.append(f"facts not captured: {type(exc).__name__}")
    repro = None
    try:
        script = repro_script(judging.prepared, manifest, device)
        if script is not None:
            repro = write_repro(results_dir, run_key, record.case_id, script)
            write_saved_inputs(results_dir, run_key, judging.prepared)
    except Exception as exc:
        problems.append(f"repro not written: {type(exc).__name__}: {exc}"[:200])
    detail = record.detail
    if problems:
        detail = "; ".join([*([detail] if detail else []), *problems])
    return replace(record, facts=facts, repro=repro, detail=detail)


__all__ = [
    "EXPLAINED",
    "Judging",
    "repro_script",
    "saved_inputs_finder",
    "with_judging_evidence",
    "write_repro",
    "write_saved_inputs",
]
