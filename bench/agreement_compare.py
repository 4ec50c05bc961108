"""The long runs' verdict: a CPU validation run and a clean simdev run, case for case.

Pure (no pytest, no torch), so `tests/test_agreement_compare.py` pins it; `agreement.py`
loads the two results and prints what this returns. In CPU validation every executed
case must pass (anything else is a harness or PyTorch bug, never a backend result), and
clean simdev computes with the CPU's own kernels, so on a case both executed it must
have the CPU's status. What one side executed and the other did not (its manifest
declines a capability or dtype the other claims) is counted by the reason the other
side gave, never silently dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

PASSED = "passed"
NOT_RUN = "not_run"
SKIPPED = "skipped"
UNEXECUTED = frozenset((NOT_RUN, SKIPPED))


class Outcome(NamedTuple):
    """A record's status, the reason when not_run, and a one-line why (mismatch,
    exception or crash kind) for a case that did not pass."""

    status: str
    reason: str | None = None
    why: str | None = None


@dataclass
class Agreement:
    """What the two runs say: statuses per side, what differs, what only one ran."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    # case id -> outcome, for executed cases that did not pass, per side
    not_passed: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    # case id -> (reference outcome, other outcome): executed on both, status differs
    differ: dict[str, tuple[Outcome, Outcome]] = field(default_factory=dict)
    # (side that executed it, the other side's status and reason) -> case count
    one_sided: Counter[tuple[str, str]] = field(default_factory=Counter)
    both_executed: int = 0

    @property
    def clean(self) -> bool:
        """Every executed case passed on both sides, and no status differs."""
        return not self.differ and not any(self.not_passed.values())


def compare(
    names: tuple[str, str],
    reference: Mapping[str, Outcome],
    other: Mapping[str, Outcome],
) -> Agreement:
    """Compare two runs keyed by case id (see the module docstring)."""
    result = Agreement()
    for name, side in zip(names, (reference, other), strict=True):
        result.counts[name] = Counter(o.status for o in side.values())
        result.not_passed[name] = {
            case: o
            for case, o in sorted(side.items())
            if o.status not in UNEXECUTED and o.status != PASSED
        }
    for case in sorted(reference.keys() | other.keys()):
        want, got = reference.get(case), other.get(case)
        ran_want = want is not None and want.status not in UNEXECUTED
        ran_got = got is not None and got.status not in UNEXECUTED
        if ran_want and ran_got:
            result.both_executed += 1
            assert want is not None and got is not None
            if want.status != got.status:
                result.differ[case] = (want, got)
        elif ran_want or ran_got:
            ran, absent = (names[0], got) if ran_want else (names[1], want)
            why = "no record" if absent is None else f"{absent.status}: {absent.reason}"
            result.one_sided[(ran, why)] += 1
    return result


def render(names: tuple[str, str], agreement: Agreement, *, limit: int = 50) -> str:
    """Plain-text lines: statuses per side, non-passed cases, differences, one-sided."""
    lines = []
    for name in names:
        counts = ", ".join(
            f"{k} {v}" for k, v in sorted(agreement.counts[name].items())
        )
        lines.append(
            f"{name}: {sum(agreement.counts[name].values())} records ({counts})"
        )
    for name in names:
        bad = agreement.not_passed[name]
        lines.append(f"{name}: {len(bad)} executed case(s) did not pass")
        lines.extend(
            f"  {case} {o.status}: {o.why or ''}"[:240]
            for case, o in list(bad.items())[:limit]
        )
    lines.append(
        f"executed on both: {agreement.both_executed}, "
        f"status differs: {len(agreement.differ)}"
    )
    lines.extend(
        f"  {case}: {names[0]} {a.status}, {names[1]} {b.status}: {b.why or a.why or ''}"[
            :240
        ]
        for case, (a, b) in list(agreement.differ.items())[:limit]
    )
    for (ran, why), n in sorted(agreement.one_sided.items()):
        lines.append(f"executed on {ran} only: {n} (the other: {why})")
    lines.append("agree: yes" if agreement.clean else "agree: no")
    return "\n".join(lines)


__all__ = ["Agreement", "Outcome", "compare", "render"]
