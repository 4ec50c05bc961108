"""Which cases this run executes: the case source's selection, a shard, resume, node ids.

Every process that collects (each xdist worker, or the single local process) calls
`plan_cases` with the same inputs and gets the same ordered list; the controller
calls it too for not_run accounting and progress totals.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from torchcts_schema import CaseRecord, CaseSpec, Manifest, case_id_for_node

from torchcts_runner.casesource import CaseSource


class SelectionError(Exception):
    """A selection argument that matches nothing or makes no sense."""


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4); shards count from 1."""
    if not text:
        return None
    try:
        index, total = (int(part) for part in text.split("/"))
    except ValueError:
        raise SelectionError(f"--shard {text!r}: expected I/N, e.g. 1/4") from None
    if total < 1 or not 1 <= index <= total:
        raise SelectionError(f"--shard {text!r}: need 1 <= I <= N")
    return index, total


def in_shard(case_id: str, shard: tuple[int, int] | None) -> bool:
    """Stable partition by a hash of the case id (same on every machine)."""
    if shard is None:
        return True
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0] - 1


@dataclass
class CasePlan:
    """The ordered cases to collect, and the not_run records of the selection."""

    planned: list[CaseSpec]  # in the shard, before resume and node-id filters
    to_run: list[CaseSpec]  # what becomes pytest items
    not_run: list[CaseRecord]

    @property
    def planned_ids(self) -> list[str]:
        """Ids of every planned case (what a complete run has a record for)."""
        return [s.case_id for s in self.planned]


def unmatched_filter(
    selected: Any, op_globs: Sequence[str], dtypes: Sequence[str], suites: Sequence[str]
) -> str | None:
    """A selection filter that matches no case of the manifest, with the closest
    names, so a typo is an error before anything runs instead of an empty run."""
    everything = [*selected.runnable, *selected.not_run]
    # a source may match an op by its name without a variant ("div" selects
    # "div.no_rounding_mode"): every dot-prefix of an op counts as a name of it
    ops = {c.op for c in everything}
    names = {
        ".".join(op.split(".")[:n]) for op in ops for n in range(1, op.count(".") + 2)
    }
    checks = (
        ("--op", op_globs, names, True),
        ("--dtype", dtypes, {c.dtype for c in everything if c.dtype}, False),
        ("--suite", suites, {c.suite for c in everything}, False),
    )
    for flag, wanted, known, glob in checks:
        for value in wanted:
            hit = (
                any(fnmatch.fnmatchcase(k, value) for k in known)
                if glob
                else (value in known)
            )
            if hit:
                continue
            pool = sorted(ops) if flag == "--op" else sorted(known)
            close = difflib.get_close_matches(value, pool, n=5, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            return f"{flag} {value!r} matches nothing in this manifest{hint}"
    return None


def plan_cases(
    source: CaseSource,
    manifest: Manifest,
    *,
    level: int | None,
    dtypes: Sequence[str],
    suites: Sequence[str],
    op_globs: Sequence[str],
    shard: tuple[int, int] | None,
    done: Collection[str] = (),
    node_ids: Sequence[str] = (),
) -> CasePlan:
    """Select, shard, drop finished cases (resume) and apply node-id arguments."""
    selection = source.selection(
        level=level,
        dtypes=tuple(dtypes),
        suites=tuple(suites),
        op_globs=tuple(op_globs),
    )
    selected = source.select_cases(manifest, selection)
    problem = unmatched_filter(selected, op_globs, dtypes, suites)
    if problem is not None:
        raise SelectionError(problem)
    planned = [s for s in selected.runnable if in_shard(s.case_id, shard)]
    not_run = [r for r in selected.not_run if in_shard(r.case_id, shard)]
    wanted = None
    if node_ids:
        wanted = set()
        known = {s.case_id for s in planned}
        for node_id in node_ids:
            case_id = case_id_for_node(node_id)
            if case_id is None or case_id not in known:
                raise SelectionError(
                    f"{node_id}: not a case of this manifest and selection"
                    + (f" (shard {shard[0]}/{shard[1]})" if shard else "")
                )
            wanted.add(case_id)
    done_set = set(done)
    to_run = [
        s
        for s in planned
        if s.case_id not in done_set and (wanted is None or s.case_id in wanted)
    ]
    return CasePlan(planned, to_run, not_run)


__all__ = [
    "CasePlan",
    "SelectionError",
    "in_shard",
    "parse_shard",
    "plan_cases",
    "unmatched_filter",
]
