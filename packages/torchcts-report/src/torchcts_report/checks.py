"""Type checks on a loaded artifact, so renderers can trust what they format.

The schema loader checks keys and enum values; a hand-edited or hostile artifact can
still carry a number where a name belongs. One clear error naming the file, the case
and the field is better than a traceback from deep inside a renderer.
"""

from __future__ import annotations

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
        for record in records:
            # one pass; a record of the usual exact types costs one chain of identity
            # tests, anything else (a crash, an int duration, a str subclass) gets the
            # full check, which names the first wrong field
            if not (
                type(record.case_id) is str
                and type(record.node_id) is str
                and type(record.op) is str
                and type(record.variant) is str
                and type(record.suite) is str
                and type(record.isolation) is str
                and type(record.level) is int
                and type(record.extra) is dict
                and (record.dtype is None or type(record.dtype) is str)
                and (record.sample is None or type(record.sample) is int)
                and (record.detail is None or type(record.detail) is str)
                and (record.duration_s is None or type(record.duration_s) is float)
                and record.mismatch is None
                and record.exception_type is None
                and record.exception_message is None
                and record.worker is None
                and record.crash is None
            ):
                _check_record(record, where)
    if not isinstance(artifact.diagnostics, dict):
        raise ArtifactError(where, "diagnostics is not an object")


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
