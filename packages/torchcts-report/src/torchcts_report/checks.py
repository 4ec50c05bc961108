"""Type checks on a loaded artifact, so renderers can trust what they format.

The schema loader checks keys and enum values; a hand-edited or hostile artifact can
still carry a number where a name belongs. One clear error naming the file, the case
and the field is better than a traceback from deep inside a renderer.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from torchcts_schema import (
    ArtifactError,
    CaseRecord,
    CrashInfo,
    RunArtifact,
    RunMetadata,
    metadata_problems,
)

_OPTIONAL_STR = (str, type(None))
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "case_id": (str,),
    "node_id": (str,),
    "op": (str,),
    "variant": (str,),
    "dtype": _OPTIONAL_STR,
    "sample": (int, type(None)),
    "level": (int,),
    "suite": (str,),
    "mismatch": _OPTIONAL_STR,
    "exception_type": _OPTIONAL_STR,
    "exception_message": _OPTIONAL_STR,
    "duration_s": (int, float, type(None)),
    "isolation": (str,),
    "detail": _OPTIONAL_STR,
    "worker": _OPTIONAL_STR,
    "extra": (dict,),
}
# exact types `_check_value` always accepts (a bool, never listed, is refused)
_EXACT_TYPES = {name: frozenset(kinds) for name, kinds in _RECORD_TYPES.items()}
_CRASH_TYPES: dict[str, tuple[type, ...]] = {
    "signal": _OPTIONAL_STR,
    "exit_code": (int, type(None)),
    "detail": (str,),
    "evidence": _OPTIONAL_STR,
}


def check_artifact(artifact: RunArtifact, where: str) -> None:
    """Raise `ArtifactError` naming `where`, the case and the field of a wrong type."""
    _check_metadata(artifact.metadata, where)
    for records in (artifact.results, artifact.not_run):
        if _plainly_typed(records):
            # only a crash can still hold a wrong type: check those records
            crashed = [r for r in records if r.crash is not None]
        else:
            crashed = records  # the full check names the first wrong field
        for record in crashed:
            _check_record(record, where)
    if not isinstance(artifact.diagnostics, dict):
        raise ArtifactError(where, "diagnostics is not an object")


def _plainly_typed(records: list[CaseRecord]) -> bool:
    """Whether every field but crash holds one of its exact usual types, so that the
    full check would pass every record (anything else: a str subclass, a bool
    level, goes to the full check). A field at a time, in C: at level 4 the full
    check of every record (each carries a worker) was half a second."""
    return all(
        set(map(type, map(attrgetter(name), records))) <= kinds
        for name, kinds in _EXACT_TYPES.items()
    )


def _check_metadata(metadata: RunMetadata, where: str) -> None:
    problems = metadata_problems(metadata)
    if problems:
        raise ArtifactError(where, f"run metadata {problems[0]}")


def _check_record(record: CaseRecord, where: str) -> None:
    if not isinstance(record.case_id, str):
        raise ArtifactError(where, f"a case id is not a string: {record.case_id!r:.60}")
    for name, allowed in _RECORD_TYPES.items():
        _check_value(getattr(record, name), allowed, where, record.case_id, name)
    if isinstance(record.crash, CrashInfo):
        for name, allowed in _CRASH_TYPES.items():
            value = getattr(record.crash, name)
            _check_value(value, allowed, where, record.case_id, f"crash.{name}")


def _check_value(
    value: Any, allowed: tuple[type, ...], where: str, case_id: str, name: str
) -> None:
    if isinstance(value, bool) and bool not in allowed:
        ok = False  # a bool is an int to Python, never a level or a duration to us
    else:
        ok = isinstance(value, allowed)
    if not ok:
        raise ArtifactError(
            where,
            f"case {case_id!r:.120}: {name} has the wrong type "
            f"({type(value).__name__}: {value!r:.60})",
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
