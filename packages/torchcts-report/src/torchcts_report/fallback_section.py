"""The scorecard's CPU-fallback section: a pass through a CPU fallback is not native.

A case whose record names overloads that ran through the device's CPU fallback
(`CaseRecord.cpu_fallback`) is counted apart from the native passes: the section
gives both counts, every fallen-back overload with the cases that reached it, and
the cases that passed only through the fallback, by name.
"""

from __future__ import annotations

from collections import Counter

from torchcts_schema import CaseRecord, NextFix, Status

from torchcts_report.tallies import STATUSES
from torchcts_report.text import md_code, table

MAX_LISTED = 50


def fallback_passes(records: list[CaseRecord]) -> int:
    """How many passed cases ran through a CPU fallback."""
    return sum(1 for r in records if r.cpu_fallback and r.status is Status.PASSED)


def fallback_section(records: list[CaseRecord]) -> str:
    """Markdown for the cases that ran through a CPU fallback, or "" when none did."""
    fell_back = [r for r in records if r.cpu_fallback]
    if not fell_back:
        return ""
    statuses = Counter(r.status for r in fell_back)
    passed = sum(1 for r in records if r.status is Status.PASSED)
    via = statuses[Status.PASSED]
    cases: Counter[str] = Counter()
    passes: Counter[str] = Counter()
    for record in fell_back:
        for name in record.cpu_fallback or ():
            cases[name] += 1
            passes[name] += record.status is Status.PASSED
    forbidden = sum(
        1
        for r in fell_back
        if r.status is Status.FAILED and r.next_fix is NextFix.IMPLEMENT_OR_DECLARE
    )
    text = (
        f"{len(fell_back)} executed case(s) ran part of their work on the CPU, "
        "through the device's fallback instead of a kernel of the backend's own "
        "(the overloads below)."
    )
    if via:
        text += (
            f" **{via} passed only through it**, counted apart from the "
            f'{passed - via} native pass(es); `CPU_FALLBACK = "forbid"` in the '
            "manifest fails such cases."
        )
    if forbidden:
        text += (
            f" {forbidden} failed because the manifest forbids the CPU fallback "
            "(next fix: implement or declare)."
        )
    parts = [
        "## CPU fallback",
        "",
        text,
        "",
        table(
            ["status", "cases"],
            [[f"`{s.value}`", str(statuses[s])] for s in STATUSES if statuses[s]],
        ),
        "",
        table(
            ["overload", "cases", "of them passed"],
            [
                [md_code(name), str(n), str(passes[name])]
                for name, n in sorted(cases.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
        ),
    ]
    flagged = sorted(
        (r.case_id, r.cpu_fallback or ())
        for r in fell_back
        if r.status is Status.PASSED
    )
    if flagged:
        parts += ["", "Cases that passed through the CPU fallback:", ""]
        parts += [
            f"- {md_code(case_id)}: {', '.join(md_code(n) for n in names)}"
            for case_id, names in flagged[:MAX_LISTED]
        ]
        if len(flagged) > MAX_LISTED:
            parts.append(f"- ... and {len(flagged) - MAX_LISTED} more")
    return "\n".join(parts)
