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
import os
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr
from torchcts_schema import (
    NODE_PREFIX,
    CaseRecord,
    CaseSpec,
    Status,
    for_terminal,
    gc_paused,
)

RECORD_PROPERTY = "torchcts_record"
STATUS_ATTRIBUTE = "torchcts_status"  # what a report keeps once its record is journaled
Executor = Callable[["CaseItem"], CaseRecord]
# A case has no line in its manifest; pytest still wants one wherever a report names
# the item's place (a skip mark's report asserts it is not None): the top of the file.
CASE_LINE = 0
_NOT_FAILURES = frozenset({Status.PASSED, Status.SKIPPED, Status.NOT_RUN})


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

    @cached_property
    def case_hooks(self) -> Any:
        """The hook caller of every case item, found once: pytest looks it up by the
        node's path (its conftest modules) on each hook call of each item, and all
        case items share one path (1% of a level-4 run)."""
        return self.session.gethookproxy(self.path)

    @cached_property
    def case_location_path(self) -> str:
        """The path part of every case item's ``location``, found once (pytest
        resolves it item by item: another 1% of a level-4 run)."""
        return str(
            self.session._node_location_to_relpath(Path(os.path.abspath(self.path)))
        )


class CaseItem(pytest.Item):
    """One case; `executor` is the process's way of running it."""

    def __init__(self, *, spec: CaseSpec, executor: Executor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.executor = executor
        self.limit_s: float | None = None
        self.add_words()

    def add_words(self) -> None:
        """``-k`` matches a case by its op, variant, suite and dtype too."""
        spec = self.spec
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

    def forget_record(self) -> None:
        """The call report has its copy of the record's text by now: the item lets go
        of it, so the teardown report does not carry (and xdist send) it again."""
        self.user_properties.clear()

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """A case failure is data: one line, not a traceback of the harness."""
        if isinstance(excinfo.value, CaseOutcome):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int, str]:
        """Where pytest says the case is: the manifest, its top (`CASE_LINE`), and
        the case id."""
        return self.path, CASE_LINE, self.spec.case_id

    @property
    def ihook(self) -> Any:
        """pytest's hook caller for this node: its collection's (`case_hooks`)."""
        parent = self.parent
        if isinstance(parent, CaseCollection):
            return parent.case_hooks
        return super().ihook

    @cached_property
    def location(self) -> tuple[str, int | None, str]:
        """``reportinfo`` as pytest words it, the path found once per collection."""
        parent = self.parent
        if isinstance(parent, CaseCollection) and parent.path == self.path:
            return parent.case_location_path, CASE_LINE, self.spec.case_id
        return super().location


def build_items(
    session: pytest.Session, specs: list[CaseSpec], executor: Executor
) -> list[pytest.Item]:
    """One item per spec, in order, under a single ``torchcts`` collector.

    An item's node id is its parent's and its name joined by ``::``, which is
    `node_id_for_case`. The first item is made by pytest's constructor; the others
    are stamped from it (`ItemStamp`) where pytest's item has the layout the stamp
    knows, by the constructor otherwise.
    """
    parent = CaseCollection.from_parent(
        session, name="torchcts", nodeid=NODE_PREFIX.removesuffix("::")
    )
    if not specs:
        return []
    first = _constructed(parent, specs[0], executor)
    stamp = ItemStamp.of(first, parent)
    with gc_paused():  # items live to the run's end: collections here free nothing
        if stamp is None:
            rest = [_constructed(parent, spec, executor) for spec in specs[1:]]
        else:
            rest = [stamp.item(spec) for spec in specs[1:]]
    return [first, *rest]


def _constructed(
    parent: CaseCollection, spec: CaseSpec, executor: Executor
) -> CaseItem:
    return CaseItem.from_parent(parent, name=spec.case_id, spec=spec, executor=executor)


class ItemStamp:
    """Makes case items as pytest's constructor would, at a quarter of its cost.

    pytest's node constructor (its metaclass, ``from_parent``, three ``__init__``
    levels) took 1.4 s of the 5.6 s before a level-4 run's first case (105,408
    items). A case item's attributes are its place in the tree (shared with its
    siblings), its name and node id, and empty per-node containers (keywords,
    markers, stash, report sections, user properties). The stamp copies the shared
    ones from an item pytest made and makes the per-node ones afresh, of the types
    pytest used. It is used only when that item has exactly the attributes listed
    here; a pytest that adds one gets its own constructor for every item.
    """

    SHARED = ("config", "session", "parent", "path")
    SLOTS = ("__dict__", "_id", "_store", "config", "name", "parent", "path", "session")
    FIELDS = frozenset(
        {
            "keywords",
            "own_markers",
            "extra_keyword_matches",
            "stash",
            "_report_sections",
            "user_properties",
            "spec",
            "executor",
            "limit_s",
        }
    )

    def __init__(self, first: CaseItem, parent: CaseCollection) -> None:
        self._shared = [(name, getattr(first, name)) for name in self.SHARED]
        self._parent_id = parent.id
        self._keywords = type(first.keywords)
        self._stash = type(first.stash)
        self._executor = first.executor

    @classmethod
    def of(cls, first: CaseItem, parent: CaseCollection) -> ItemStamp | None:
        """A stamp of `first` (made under `parent`), or None where pytest's items
        differ from what it knows."""
        slots = {s for k in CaseItem.__mro__ for s in vars(k).get("__slots__", ())}
        known = slots == set(cls.SLOTS) and set(vars(first)) == cls.FIELDS
        return cls(first, parent) if known and first.parent is parent else None

    def item(self, spec: CaseSpec) -> CaseItem:
        """The item pytest's constructor would make for `spec`."""
        item: CaseItem = object.__new__(CaseItem)
        for name, value in self._shared:
            setattr(item, name, value)
        item.name = spec.case_id
        item._id = self._parent_id.child(spec.case_id)
        item.keywords = self._keywords(item)  # type: ignore[call-arg]
        item.own_markers = []
        item.extra_keyword_matches = set()
        item.stash = item._store = self._stash()
        item._report_sections = []
        item.user_properties = []
        item.spec = spec
        item.executor = self._executor
        item.limit_s = None
        item.add_words()
        return item


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


def keep_failure(report: Any) -> None:
    """An xfail mark (a conftest's, a plugin's) never turns a case that did not pass
    into pytest's "xfailed", a skip: its call report stays the failure its record
    is, so the session's exit status, the terminal and pytest's JUnit XML say what
    the journal says. Only that downgrade is undone: an xfail's other endings (a
    strict XPASS, a case not run) already say no more than the record."""
    if getattr(report, "when", None) != "call" or not hasattr(report, "wasxfail"):
        return
    record = record_of(report)
    if record is None or record.status in _NOT_FAILURES:
        return
    report.outcome = "failed"
    del report.wasxfail


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
    "ItemStamp",
    "build_items",
    "carried",
    "keep_failure",
    "record_of",
    "record_text",
    "release_record",
    "status_of",
    "summary",
]
