"""Cases as pytest items, collected without any test file.

One `CaseCollection` node (node id ``torchcts``) holds one `CaseItem` per case, so a
case's node id is ``torchcts::<case id>`` (the schema's `node_id_for_case`). The item's
`runtest` asks the executor for a `CaseRecord`, attaches it to the report through
``user_properties`` (how xdist workers hand data to the controller, as JSON text)
and turns it into the pytest outcome: passed passes, skipped skips, every other
status fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr
from torchcts_schema import (
    NODE_PREFIX,
    CaseRecord,
    CaseSpec,
    Status,
    for_terminal,
)

RECORD_PROPERTY = "torchcts_record"
STATUS_ATTRIBUTE = "torchcts_status"  # what a report keeps once its record is journaled
Executor = Callable[["CaseItem"], CaseRecord]


class CaseOutcome(Exception):
    """Raised by a case item whose record is not a pass (the record is the data)."""

    def __init__(self, record: CaseRecord) -> None:
        super().__init__(summary(record))
        self.record = record


def summary(record: CaseRecord) -> str:
    """One line saying how a case ended."""
    parts = [record.status.value]
    if record.crash is not None:
        parts.append(
            f"({record.crash.kind.value}{' ' + record.crash.signal if record.crash.signal else ''})"
        )
    why = record.mismatch or record.exception_message or record.detail
    if record.exception_type:
        why = f"{record.exception_type}: {why}"
    if why:
        parts.append(f"- {why.splitlines()[0][:300] if why.strip() else why}")
    # pytest and xdist carry this text as a str (execnet encodes it as UTF-8): a
    # backend message with a lone surrogate or escape codes must arrive as data
    return for_terminal(" ".join(parts), keep_newlines=False)


class CaseCollection(pytest.Collector):
    """The parent of every case item (node id ``torchcts``)."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        """Items are created up front by the plugin; nothing to collect lazily."""
        return []


class CaseItem(pytest.Item):
    """One case; `executor` is the process's way of running it."""

    def __init__(self, *, spec: CaseSpec, executor: Executor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.executor = executor
        self.limit_s: float | None = None
        for word in (spec.op, spec.variant, spec.suite, spec.dtype or ""):
            if word:
                self.extra_keyword_matches.add(word)

    def runtest(self) -> None:
        """Execute the case and map its status to a pytest outcome."""
        record = self.executor(self)
        self.user_properties.append((RECORD_PROPERTY, carried(record, self.config)))
        if record.status is Status.PASSED:
            return
        if record.status in (Status.SKIPPED, Status.NOT_RUN):
            pytest.skip(summary(record))
        raise CaseOutcome(record)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """A case failure is data: one line, not a traceback of the harness."""
        if isinstance(excinfo.value, CaseOutcome):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where pytest says the case is: the manifest, and the case id."""
        return self.path, None, self.spec.case_id


def build_items(
    session: pytest.Session, specs: list[CaseSpec], executor: Executor
) -> list[pytest.Item]:
    """One item per spec, in order, under a single ``torchcts`` collector.

    An item's node id is its parent's and its name joined by ``::``, which is
    `node_id_for_case`; pytest derives it so (a node id given as text is parsed
    again, half a second at level 4)."""
    parent = CaseCollection.from_parent(
        session, name="torchcts", nodeid=NODE_PREFIX.removesuffix("::")
    )
    return [
        CaseItem.from_parent(parent, name=spec.case_id, spec=spec, executor=executor)
        for spec in specs
    ]


def carried(record: CaseRecord, config: pytest.Config) -> CaseRecord | str:
    """What a case's report carries: its JSON text from an xdist worker (execnet
    sends plain data only), the record itself where the report stays in process
    (a JSON round trip there was 4% of a level-4 run)."""
    return record_text(record) if hasattr(config, "workerinput") else record


def record_text(record: CaseRecord) -> str:
    """The record as JSON text: plain strings survive xdist's serializer (enums do not)."""
    return json.dumps(record.to_dict(), separators=(",", ":"))


def record_of(report: Any) -> CaseRecord | None:
    """The case record a call report (or xdist crash report) carries, if any."""
    if getattr(report, "when", None) not in ("call", "???"):
        return None
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == RECORD_PROPERTY:
            if isinstance(value, CaseRecord):
                return value
            return CaseRecord.from_dict(json.loads(value))
    return None


def release_record(report: Any, record: CaseRecord) -> None:
    """Once `record` is journaled its report keeps only the status word.

    pytest's terminal reporter holds every report until the session ends (at level 4
    about 105,000 call reports, each with its record's JSON text), and everything
    held then is still on the heap at exit.
    """
    setattr(report, STATUS_ATTRIBUTE, record.status.value)
    report.user_properties = [
        p for p in getattr(report, "user_properties", ()) if p[0] != RECORD_PROPERTY
    ]


def status_of(report: Any) -> str | None:
    """The status a case's call report stands for (kept, or from its record)."""
    kept = getattr(report, STATUS_ATTRIBUTE, None)
    if isinstance(kept, str):
        return kept
    record = record_of(report)
    return None if record is None else record.status.value


__all__ = [
    "RECORD_PROPERTY",
    "STATUS_ATTRIBUTE",
    "CaseCollection",
    "CaseItem",
    "CaseOutcome",
    "build_items",
    "carried",
    "record_of",
    "record_text",
    "release_record",
    "status_of",
    "summary",
]
