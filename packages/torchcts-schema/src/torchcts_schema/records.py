"""The records every tool exchanges: one `CaseRecord` per case, one `RunMetadata` per run.

Both convert to and from plain JSON dicts exactly (``from_dict(to_dict(x)) == x``), so an
artifact written by one version of a tool loads back field for field in another.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import MISSING, asdict, dataclass, field, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any, TypeVar

from torchcts_schema.errors import ArtifactError
from torchcts_schema.vocabulary import (
    CrashKind,
    ExpectedSource,
    NextFix,
    NotRunReason,
    Status,
    ToleranceSource,
)

JsonDict = dict[str, Any]
E = TypeVar("E", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class CrashInfo:
    """How a crashed case ended: the kind, and the signal or exit code that proves it."""

    kind: CrashKind
    signal: str | None = None
    exit_code: int | None = None
    detail: str = ""
    evidence: str | None = None  # relative path of the record in <key>_crashes/

    def to_dict(self) -> JsonDict:
        """Plain JSON form (spelled out: ``asdict`` deep-copies field by field, and
        every record's blocks are written at least twice)."""
        return {
            "kind": self.kind,
            "signal": self.signal,
            "exit_code": self.exit_code,
            "detail": self.detail,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: JsonDict) -> CrashInfo:
        """Inverse of `to_dict`; a wrong kind names the value."""
        if not isinstance(data, dict):
            raise ArtifactError(None, f"crash block is not an object: {data!r:.80}")
        _check_keys(cls, data, "crash")
        return cls(
            kind=_enum(CrashKind, data.get("kind"), None, "crash.kind"),
            signal=data.get("signal"),
            exit_code=data.get("exit_code"),
            detail=data.get("detail", ""),
            evidence=data.get("evidence"),
        )


@dataclass(frozen=True, slots=True)
class ToleranceUsed:
    """The tolerance a result was judged with, where it came from, and whether the
    result passed only because an override widened it (it fails under the default)."""

    dtype: str | None
    atol: float
    rtol: float
    source: ToleranceSource
    override_needed: bool = False

    def to_dict(self) -> JsonDict:
        """Plain JSON form (spelled out, as `CrashInfo.to_dict`)."""
        return {
            "dtype": self.dtype,
            "atol": self.atol,
            "rtol": self.rtol,
            "source": self.source,
            "override_needed": self.override_needed,
        }

    @classmethod
    def from_dict(cls, data: JsonDict) -> ToleranceUsed:
        """Inverse of `to_dict`; a wrong value is named."""
        if not isinstance(data, dict):
            raise ArtifactError(None, f"tolerance block is not an object: {data!r:.80}")
        _check_keys(cls, data, "tolerance")
        for name in ("atol", "rtol"):
            value = data.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ArtifactError(
                    None, f"tolerance {name} is not a number: {value!r:.40}"
                )
        dtype, needed = data.get("dtype"), data.get("override_needed", False)
        if not isinstance(dtype, str | None) or not isinstance(needed, bool):
            raise ArtifactError(None, f"tolerance block has a bad value: {data!r:.80}")
        return cls(
            dtype=dtype,
            atol=data["atol"],
            rtol=data["rtol"],
            source=_enum(ToleranceSource, data.get("source"), None, "tolerance.source"),
            override_needed=needed,
        )


@dataclass(frozen=True, slots=True)
class CaseRecord:
    """One case's result: what ran, against what, and how it ended."""

    case_id: str
    node_id: str
    op: str
    variant: str
    dtype: str | None
    sample: int | None
    level: int
    status: Status
    expected_source: ExpectedSource | None
    suite: str = "opinfo"
    mismatch: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    crash: CrashInfo | None = None
    duration_s: float | None = None
    isolation: str = "none"
    next_fix: NextFix | None = None
    not_run_reason: NotRunReason | None = None
    detail: str | None = None
    worker: str | None = None
    extra: JsonDict = field(default_factory=dict)
    tolerance: ToleranceUsed | None = None  # of a judged result
    # what `torchcts-report explain` shows, captured when the case was judged
    # (inputs, first mismatching elements; bounded, see torchcts_cases.case_facts)
    facts: JsonDict | None = None
    repro: str | None = None  # relative path of the repro script in the results dir
    # the overloads that ran through the device's CPU fallback, sorted (None: none
    # did, or nothing observed it); see torchcts_cases.fallback_watch
    cpu_fallback: tuple[str, ...] | None = None

    def to_dict(self) -> JsonDict:
        """Plain JSON form, enum members as their string values."""
        out = {name: getattr(self, name) for name in _CASE_FIELDS}
        if self.crash is not None:
            out["crash"] = self.crash.to_dict()
        out["extra"] = dict(self.extra)
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance.to_dict()
        if self.facts is not None:
            out["facts"] = dict(self.facts)
        if self.cpu_fallback is not None:
            out["cpu_fallback"] = list(self.cpu_fallback)
        return out

    @classmethod
    def from_dict(cls, data: JsonDict) -> CaseRecord:
        """Inverse of `to_dict`; an unknown key or bad value raises `ArtifactError`."""
        if not isinstance(data, dict):
            raise ArtifactError(None, f"case record is not an object: {data!r:.80}")
        if not data.keys() <= _CASE_FIELD_SET:
            _check_keys(cls, data, "case record")
        for required in ("case_id", "status"):
            if required not in data:
                raise ArtifactError(None, f"case record lacks '{required}'")
        crash = data.get("crash")
        tolerance = data.get("tolerance")
        facts, repro = data.get("facts"), data.get("repro")
        where = data["case_id"]  # formatted into a message only on error
        if not isinstance(facts, dict | None) or not isinstance(repro, str | None):
            raise ArtifactError(
                None, f"{where_text(where)}facts or repro has the wrong type"
            )
        fallback = data.get("cpu_fallback")
        if fallback is not None and not is_overload_list(fallback):
            raise ArtifactError(
                None,
                f"{where_text(where)}cpu_fallback is not a list of overload names: "
                f"{fallback!r:.80}",
            )
        return cls(
            case_id=data["case_id"],
            node_id=data.get("node_id", ""),
            op=data.get("op", ""),
            variant=data.get("variant", ""),
            dtype=data.get("dtype"),
            sample=data.get("sample"),
            level=data.get("level", 1),
            status=_enum(Status, data["status"], where, "status"),
            expected_source=_opt_enum(
                ExpectedSource, data.get("expected_source"), where, "expected_source"
            ),
            suite=data.get("suite", "opinfo"),
            mismatch=data.get("mismatch"),
            exception_type=data.get("exception_type"),
            exception_message=data.get("exception_message"),
            crash=CrashInfo.from_dict(crash) if crash is not None else None,
            duration_s=data.get("duration_s"),
            isolation=data.get("isolation", "none"),
            next_fix=_opt_enum(NextFix, data.get("next_fix"), where, "next_fix"),
            not_run_reason=_opt_enum(
                NotRunReason, data.get("not_run_reason"), where, "not_run_reason"
            ),
            detail=data.get("detail"),
            worker=data.get("worker"),
            extra=dict(data.get("extra") or {}),
            tolerance=None if tolerance is None else ToleranceUsed.from_dict(tolerance),
            facts=None if facts is None else dict(facts),
            repro=repro,
            cpu_fallback=None if fallback is None else tuple(fallback),
        )


def is_overload_list(value: Any) -> bool:
    """Whether `value` is what a record's cpu_fallback holds: a list of names."""
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


_CASE_FIELDS = tuple(f.name for f in fields(CaseRecord))
_CASE_FIELD_SET = frozenset(_CASE_FIELDS)


# RunMetadata.options key: ``NAME=value`` labels of environment settings that change
# how the backend behaved (written by the runner, read by backend-pack)
RUNTIME_MODIFICATIONS_OPTION = "runtime_modifications"


@dataclass(frozen=True, slots=True)
class RunMetadata:
    """Everything a reviewer needs to know about a run besides its cases."""

    run_key: str
    device: str
    hardware_key: str
    backend: str
    os: str
    python: str
    torch_version: str
    torchcts_version: str
    manifest_digest: str
    command: str
    started_at: str
    ended_at: str | None = None
    completed_normally: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    level: int | None = None
    options: JsonDict = field(default_factory=dict)
    probes: dict[str, int] = field(default_factory=dict)
    resumes: int = 0  # how many times --resume continued this run
    active_s: float | None = None  # seconds spent running, over every attempt
    interrupted_by: str | None = None  # "SIGINT"/"SIGTERM" when a user ended it
    # a subset run: cases outside its level and filters, counted by reason, with no
    # record of their own (see `OUTSIDE_REASONS`)
    outside: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> JsonDict:
        """Plain JSON form."""
        out = asdict(self)
        out["counts"] = dict(self.counts)
        if not self.outside:  # a full run's metadata stays as it always was
            del out["outside"]
        return out

    @classmethod
    def from_dict(cls, data: JsonDict) -> RunMetadata:
        """Inverse of `to_dict`; missing required keys are named."""
        if not isinstance(data, dict):
            raise ArtifactError(None, "run metadata is not an object")
        _check_keys(cls, data, "run metadata")
        missing = [
            f.name
            for f in fields(cls)
            if f.name not in data
            and f.default is MISSING
            and f.default_factory is MISSING
        ]
        if missing:
            raise ArtifactError(None, f"run metadata lacks {', '.join(missing)}")
        for name, value in data.items():
            expected = _METADATA_TYPES[name]
            if not isinstance(value, expected) or (
                isinstance(value, bool) and bool not in _as_tuple(expected)
            ):
                raise ArtifactError(
                    None, f"run metadata {name} has the wrong type: {value!r:.60}"
                )
        for table in ("counts", "probes", "outside"):
            if not all(
                isinstance(k, str) and type(v) is int
                for k, v in data.get(table, {}).items()
            ):
                raise ArtifactError(
                    None, f"run metadata {table} must map names to integers"
                )
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


_METADATA_TYPES: dict[str, type | tuple[type, ...]] = {
    **{f.name: str for f in fields(RunMetadata)},
    "ended_at": (str, type(None)),
    "completed_normally": bool,
    "counts": dict,
    "level": (int, type(None)),
    "options": dict,
    "probes": dict,
    "resumes": int,
    "active_s": (int, float, type(None)),
    "interrupted_by": (str, type(None)),
    "outside": dict,
}


def metadata_problems(metadata: RunMetadata) -> list[str]:
    """Fields of `metadata` whose value has the wrong type, in words (the one check
    every reader of artifacts uses, whatever path built the object)."""
    problems = []
    for f in fields(RunMetadata):
        value = getattr(metadata, f.name)
        kinds = _as_tuple(_METADATA_TYPES[f.name])
        if not isinstance(value, kinds) or (
            isinstance(value, bool) and bool not in kinds
        ):
            names = " or ".join(
                "null" if k is type(None) else k.__name__ for k in kinds
            )
            problems.append(
                f"{f.name} has the wrong type ({type(value).__name__}: "
                f"{value!r:.60}; expected {names})"
            )
    for table in ("counts", "probes"):
        value = getattr(metadata, table)
        if isinstance(value, dict) and not all(
            isinstance(k, str) and type(v) is int for k, v in value.items()
        ):
            problems.append(f"{table} must map names to integers")
    return problems


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def count_statuses(records: list[CaseRecord]) -> dict[str, int]:
    """Counts per status, every status present (zero included), in the seed's order.

    Tallied in C: the end of a level-4 run counts 130,000 records more than once
    (final metadata, the loader's check), a quarter of a second each record by record.
    """
    tally = Counter(map(_STATUS, records))
    counts = {s.value: tally.pop(s, 0) for s in Status}
    if tally:  # a status that is not one: the record-by-record count says which
        counts = {s.value: 0 for s in Status}
        for record in records:
            counts[record.status.value] += 1
    return counts


_STATUS = attrgetter("status")


def _check_keys(cls: type, data: JsonDict, what: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ArtifactError(None, f"{what} has unknown key(s): {', '.join(unknown)}")


def _enum(kind: type[E], value: Any, where: Any, key: str) -> E:
    member = kind._value2member_map_.get(value) if isinstance(value, str) else None
    if member is None:
        allowed = ", ".join(m.value for m in kind)
        raise ArtifactError(
            None, f"{where_text(where)}{key}: {value!r} is not one of {allowed}"
        ) from None
    return member  # type: ignore[return-value]


def where_text(case_id: Any) -> str:
    """Prefix naming the case in an error message, if there is one."""
    return "" if case_id is None else f"case {case_id!r} "


def _opt_enum(kind: type[E], value: Any, where: Any, key: str) -> E | None:
    return None if value is None else _enum(kind, value, where, key)
