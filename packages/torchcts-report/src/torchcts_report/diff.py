"""Run-to-run diff: what regressed, what got fixed, what changed, appeared or vanished.

A backend change that makes many cases vanish (a collection error, a narrowed
manifest) looks like progress if only failures are counted, so the diff counts
vanished cases too and the guard can fail CI on either share. A case that stops
running (executed before, not_run or skipped now) is lost coverage, not a regression
of the backend, so it is its own category and counts towards the vanished guard.
Both guards count shares of the cases the old run EXECUTED (any status but not_run):
a level-1 run records ~325,000 not_run cases, and dividing by them let a run in which
543 of 563 executed cases stopped running pass a 10% guard.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torchcts_schema import CaseRecord, RunArtifact, Status, count_statuses

from torchcts_report.text import md, md_code, table

MAX_LISTED = 200


@dataclass
class RunDiff:
    """Case ids in each category, sorted, with old and new status where both exist."""

    old_total: int
    new_total: int
    old_executed: int = 0  # old cases whose status is not not_run: the guards' base
    regressions: list[tuple[str, Status, Status]] = field(default_factory=list)
    fixes: list[tuple[str, Status, Status]] = field(default_factory=list)
    changes: list[tuple[str, Status, Status]] = field(default_factory=list)
    stopped: list[tuple[str, Status, Status]] = field(default_factory=list)
    started: list[tuple[str, Status, Status]] = field(default_factory=list)
    new: list[tuple[str, Status]] = field(default_factory=list)
    vanished: list[tuple[str, Status]] = field(default_factory=list)

    def share(self, count: int) -> float:
        """`count` as a share of the old run's executed cases (0 when there are none)."""
        return count / self.old_executed if self.old_executed else 0.0

    @property
    def lost(self) -> int:
        """Executed cases of the old run that vanished or stopped running."""
        gone = sum(status is not Status.NOT_RUN for _, status in self.vanished)
        return gone + len(self.stopped)


def diff_artifacts(old: RunArtifact, new: RunArtifact) -> RunDiff:
    """Compare two runs case by case, keyed by case id."""
    before = _by_case(old.records)
    after = _by_case(new.records)
    out = RunDiff(
        old_total=len(before),
        new_total=len(after),
        old_executed=sum(s is not Status.NOT_RUN for s in before.values()),
    )
    for case_id in sorted(before.keys() | after.keys()):
        was, now = before.get(case_id), after.get(case_id)
        if was is None and now is not None:
            out.new.append((case_id, now))
        elif now is None and was is not None:
            out.vanished.append((case_id, was))
        elif was is not None and now is not None and was is not now:
            _classify(out, (case_id, was, now))
    return out


EXECUTED = frozenset(
    {Status.PASSED, Status.FAILED, Status.ERROR, Status.UNSUPPORTED, Status.CRASHED}
)


def _classify(out: RunDiff, entry: tuple[str, Status, Status]) -> None:
    _, was, now = entry
    if was in EXECUTED and now not in EXECUTED:
        out.stopped.append(entry)
    elif was not in EXECUTED and now in EXECUTED:
        out.started.append(entry)
    elif was is Status.PASSED:
        out.regressions.append(entry)
    elif now is Status.PASSED:
        out.fixes.append(entry)
    else:
        out.changes.append(entry)


def _by_case(records: list[CaseRecord]) -> dict[str, Status]:
    return {r.case_id: r.status for r in records}


@dataclass(frozen=True)
class GuardResult:
    """Which guards tripped, as sentences for the terminal and the report."""

    breaches: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when no guard tripped."""
        return not self.breaches


def check_guards(
    diff: RunDiff,
    *,
    max_vanished_share: float | None,
    max_regressed_share: float | None,
) -> GuardResult:
    """Compare the vanished and regressed shares against their limits."""
    breaches = []
    for name, count, limit in (
        ("vanished or stopped running", diff.lost, max_vanished_share),
        ("regressed", len(diff.regressions), max_regressed_share),
    ):
        if limit is not None and diff.share(count) > limit:
            breaches.append(
                f"{count} of the old run's {diff.old_executed} executed case(s) "
                f"{name} ({diff.share(count):.2%}), above the limit of {limit:.2%} "
                "(not_run cases are not counted)"
            )
    return GuardResult(tuple(breaches))


def render_diff(diff: RunDiff, old: RunArtifact, new: RunArtifact) -> str:
    """The diff as markdown."""
    parts = ["# TorchCTS run diff", ""]
    rows = []
    for label, attr_name in (
        ("run key", "run_key"),
        ("PyTorch", "torch_version"),
        ("TorchCTS", "torchcts_version"),
        ("manifest digest", "manifest_digest"),
        ("started", "started_at"),
    ):
        a = getattr(old.metadata, attr_name)
        b = getattr(new.metadata, attr_name)
        rows.append([label, md_code(a), md_code(b)])
    rows.append(["cases", str(diff.old_total), str(diff.new_total)])
    new_executed = sum(s is not Status.NOT_RUN for s in _by_case(new.records).values())
    rows.append(["executed (not not_run)", str(diff.old_executed), str(new_executed)])
    parts.append(table(["", "old", "new"], rows))
    summary = [
        ["regressions (passed before, not now)", str(len(diff.regressions))],
        ["fixes (passing now, not before)", str(len(diff.fixes))],
        ["other status changes", str(len(diff.changes))],
        ["stopped running (executed before, not now)", str(len(diff.stopped))],
        ["started running (executed now, not before)", str(len(diff.started))],
        ["new cases", str(len(diff.new))],
        ["vanished cases", str(len(diff.vanished))],
    ]
    parts += ["", "## Summary", "", table(["change", "cases"], summary)]
    parts += [
        "",
        f"Executed cases of the old run lost (vanished or stopped running): "
        f"{diff.lost} of {diff.old_executed} ({diff.share(diff.lost):.2%}); "
        f"regressed: {len(diff.regressions)} "
        f"({diff.share(len(diff.regressions)):.2%}). The guards count these shares "
        "of executed cases, never of not_run ones.",
    ]
    warnings = [
        f"The runs differ in {what}: compare with care."
        for what, attr_name in (
            ("PyTorch version", "torch_version"),
            ("manifest", "manifest_digest"),
            ("device", "device"),
        )
        if getattr(old.metadata, attr_name) != getattr(new.metadata, attr_name)
    ]
    warnings += [
        f"The {label} run did not complete normally; its missing cases show as "
        "vanished or new."
        for label, art in (("old", old), ("new", new))
        if not art.metadata.completed_normally
    ]
    if warnings:
        parts += ["", *(f"> {w}" for w in warnings)]
    before, after = count_statuses(old.records), count_statuses(new.records)
    per_status = [
        [f"`{s}`", str(before[s]), str(after[s]), f"{after[s] - before[s]:+d}"]
        for s in before
    ]
    parts += [
        "",
        "## Cases per status",
        "",
        table(["status", "old", "new", "change"], per_status),
    ]
    for title, items in (
        ("Regressions", diff.regressions),
        ("Fixes", diff.fixes),
        ("Other status changes", diff.changes),
        ("Stopped running", diff.stopped),
        ("Started running", diff.started),
    ):
        parts += ["", f"## {title}", "", _transitions(items)]
    for title, singles in (("New cases", diff.new), ("Vanished cases", diff.vanished)):
        parts += ["", f"## {title}", "", _singles(singles)]
    return "\n".join(parts) + "\n"


def diff_json(diff: RunDiff, guards: GuardResult) -> dict[str, object]:
    """The diff as plain data for ``diff --json``: counts, guards and every case."""
    return {
        "old_cases": diff.old_total,
        "new_cases": diff.new_total,
        "old_executed": diff.old_executed,
        "lost_executed": diff.lost,
        "lost_share_of_executed": diff.share(diff.lost),
        "regressed_share_of_executed": diff.share(len(diff.regressions)),
        "guards": {"ok": guards.ok, "breaches": list(guards.breaches)},
        **{
            name: [{"case_id": c, "old": a.value, "new": b.value} for c, a, b in items]
            for name, items in (
                ("regressions", diff.regressions),
                ("fixes", diff.fixes),
                ("changes", diff.changes),
                ("stopped", diff.stopped),
                ("started", diff.started),
            )
        },
        "new": [{"case_id": c, "status": s.value} for c, s in diff.new],
        "vanished": [{"case_id": c, "status": s.value} for c, s in diff.vanished],
    }


def _transitions(items: list[tuple[str, Status, Status]]) -> str:
    if not items:
        return "None."
    rows = [
        [md_code(c), f"`{a.value}`", f"`{b.value}`"] for c, a, b in items[:MAX_LISTED]
    ]
    return table(["case", "old", "new"], rows) + _more(len(items))


def _singles(items: list[tuple[str, Status]]) -> str:
    if not items:
        return "None."
    rows = [[md_code(c), f"`{s.value}`"] for c, s in items[:MAX_LISTED]]
    return table(["case", "status"], rows) + _more(len(items))


def _more(count: int) -> str:
    if count <= MAX_LISTED:
        return ""
    return f"\n\n{md(f'… and {count - MAX_LISTED} more, not listed.')}"
