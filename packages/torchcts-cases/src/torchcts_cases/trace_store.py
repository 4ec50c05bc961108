"""The coverage trace on disk: for every case id, the aten overloads its CPU run
dispatched, and the surfaces it declares.

Half a million cases reach a few thousand distinct overload sets, so the file interns
both: overload names in `names`, distinct sets in `sets` (lists of name positions),
and a case holds the position of its set. Case ids ending in a sample number share
one list per prefix (``opinfo/add/forward/float32/`` -> the set of each sample; -1
where a sample is not traced yet); other ids sit in `cases`. Declared surfaces are
interned the same way (`declared`), so the audit needs no case listing.

Nothing here imports torch: looking a case up (`StoredTrace.reached`) is two list
indexings, which is what a run pays per record.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACE_FORMAT = "torchcts-coverage-trace"
NOT_TRACED = -1


@dataclass
class StoredTrace:
    """A trace being built or read back; `key` says which torch and index it is of."""

    key: dict[str, Any]
    catalog: str = ""  # digest of the case sources the universe was listed from
    complete: bool = False
    cpu_seconds: float = 0.0
    universe: int = 0  # how many cases the catalog listed when it was built
    names: list[str] = field(default_factory=list)
    sets: list[list[int]] = field(default_factory=list)
    groups: dict[str, list[int]] = field(default_factory=dict)
    cases: dict[str, int] = field(default_factory=dict)
    declared: dict[str, int] = field(default_factory=dict)  # group prefix or case id
    _name_at: dict[str, int] = field(default_factory=dict, repr=False)
    _set_at: dict[tuple[int, ...], int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._name_at = {n: i for i, n in enumerate(self.names)}
        self._set_at = {tuple(s): i for i, s in enumerate(self.sets)}

    # -- writing ---------------------------------------------------------------------
    def intern(self, overloads: Iterable[str]) -> int:
        """The position of a set of overload names, added when new."""
        ids = []
        for name in sorted(set(overloads)):
            at = self._name_at.get(name)
            if at is None:
                at = self._name_at[name] = len(self.names)
                self.names.append(name)
            ids.append(at)
        key = tuple(ids)
        found = self._set_at.get(key)
        if found is None:
            found = self._set_at[key] = len(self.sets)
            self.sets.append(list(key))
        return found

    def put(self, case_id: str, overloads: Iterable[str]) -> None:
        """Record what one case reached."""
        at = self.intern(overloads)
        prefix, sample = _split(case_id)
        if sample is None:
            self.cases[case_id] = at
            return
        row = self.groups.setdefault(prefix, [])
        if len(row) <= sample:
            row.extend([NOT_TRACED] * (sample + 1 - len(row)))
        row[sample] = at

    def declare(self, case_id: str, surfaces: Iterable[str]) -> None:
        """Record the surfaces a case declares (one entry per sample group)."""
        prefix, sample = _split(case_id)
        self.declared[case_id if sample is None else prefix] = self.intern(surfaces)

    # -- reading ---------------------------------------------------------------------
    def set_of(self, case_id: str) -> int:
        """The set position of a case, `NOT_TRACED` when it has none."""
        prefix, sample = _split(case_id)
        if sample is None:
            return self.cases.get(case_id, NOT_TRACED)
        row = self.groups.get(prefix)
        return row[sample] if row is not None and sample < len(row) else NOT_TRACED

    def has(self, case_id: str) -> bool:
        """Whether the case was traced."""
        return self.set_of(case_id) != NOT_TRACED

    def reached(self, case_id: str) -> tuple[str, ...] | None:
        """The sorted overloads a case reached; None when it was not traced."""
        at = self.set_of(case_id)
        if at == NOT_TRACED:
            return None
        names = self.names
        return tuple(names[i] for i in self.sets[at])

    def traced(self) -> Iterator[tuple[str, int]]:
        """(case id, set position) of every traced case."""
        for prefix, row in self.groups.items():
            for sample, at in enumerate(row):
                if at != NOT_TRACED:
                    yield f"{prefix}{sample}", at
        yield from self.cases.items()

    def names_of(self, at: int) -> list[str]:
        """The overload names of one set."""
        return [self.names[i] for i in self.sets[at]]

    def to_json(self) -> dict[str, Any]:
        """The JSON form (sorted keys: identical traces give identical files)."""
        return {
            "format": TRACE_FORMAT,
            "key": self.key,
            "catalog": self.catalog,
            "complete": self.complete,
            "cpu_seconds": round(self.cpu_seconds, 1),
            "universe": self.universe,
            "names": self.names,
            "sets": self.sets,
            "groups": self.groups,
            "cases": self.cases,
            "declared": self.declared,
        }


def _split(case_id: str) -> tuple[str, int | None]:
    prefix, _, tail = case_id.rpartition("/")
    if tail.isdigit() and prefix:
        return f"{prefix}/", int(tail)
    return case_id, None


def encode(trace: StoredTrace, compress: bool = False) -> bytes:
    """The file bytes of a trace (gzip with a fixed mtime for the packaged seed)."""
    text = json.dumps(trace.to_json(), sort_keys=True, separators=(",", ":"))
    data = text.encode("utf-8")
    return gzip.compress(data, mtime=0) if compress else data


def read_trace(path: Path, key: dict[str, Any]) -> StoredTrace | None:
    """The trace in `path` when it is well formed and of `key`; else None.

    A cache is never trusted: a file that does not parse, holds a position out of
    range or was built for another torch or index reads as absent and is rebuilt.
    """
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except (OSError, ValueError, EOFError):
        return None
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        return None
    if data.get("key") != key:
        return None
    try:
        return _checked(data)
    except (TypeError, ValueError, KeyError, IndexError):
        return None


def _checked(data: dict[str, Any]) -> StoredTrace:
    names = data["names"]
    sets = data["sets"]
    if not all(isinstance(n, str) for n in names):
        raise ValueError("names")
    for row in sets:
        _ints_within(row, 0, len(names))
    groups = {
        str(p): _ints_within(row, NOT_TRACED, len(sets))
        for p, row in data["groups"].items()
    }
    cases = _positions_by_key(data["cases"], len(sets))
    declared = _positions_by_key(data["declared"], len(sets))
    return StoredTrace(
        key=data["key"],
        catalog=str(data["catalog"]),
        complete=data["complete"] is True,
        cpu_seconds=float(data["cpu_seconds"]),
        universe=int(data.get("universe", 0)),
        names=list(names),
        sets=[list(row) for row in sets],
        groups=groups,
        cases=cases,
        declared=declared,
    )


def _positions_by_key(table: Any, sets: int) -> dict[str, int]:
    """A ``{case id or prefix: set position}`` table, checked."""
    if not isinstance(table, dict):
        raise ValueError("not a table")
    positions = _ints_within(list(table.values()), NOT_TRACED, sets)
    return dict(zip(map(str, table), positions, strict=True))


def _ints_within(row: Any, low: int, high: int) -> list[int]:
    """`row` when it is a list of plain ints in [low, high); ValueError otherwise.

    Checked a list at a time, in C (type set, min, max): a half-million positions
    are read by every executing process of every run.
    """
    if not isinstance(row, list):
        raise ValueError("not a list")
    if row and (not set(map(type, row)) <= {int} or min(row) < low or max(row) >= high):
        raise ValueError("position")
    return row


__all__ = ["NOT_TRACED", "TRACE_FORMAT", "StoredTrace", "encode", "read_trace"]
