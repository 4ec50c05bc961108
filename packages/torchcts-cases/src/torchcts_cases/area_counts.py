"""How many cases each area (OpInfo, and each hand-written suite) has at each level,
for the installed torch: the numbers of the README's areas table.

Counted from the case index and the suite modules (no sample is built, nothing is
selected against a manifest): every variant, every dtype an op declares.
"""

from __future__ import annotations

from collections import Counter

from torchcts_schema import DTYPE_NAMES

from torchcts_cases.catalog import OPINFO_SUITE, opinfo_groups, primitive_edges
from torchcts_cases.levels import opinfo_level
from torchcts_cases.suites import all_hand_cases

LEVELS = tuple(range(1, 9))


def area_level_counts() -> dict[str, Counter[int]]:
    """Area name -> level -> number of cases ("opinfo" first, then suites in order)."""
    out: dict[str, Counter[int]] = {OPINFO_SUITE: Counter()}
    opinfo = out[OPINFO_SUITE]
    for dtype in (*DTYPE_NAMES, None):
        for op, entry, variant, count in opinfo_groups(dtype):
            family = entry["family"]
            edges = primitive_edges(op, entry, variant)
            for sample in range(count):
                level = opinfo_level(family, variant, dtype, sample, sample in edges)
                opinfo[level] += 1
    for case in all_hand_cases().values():
        assert case.spec is not None
        out.setdefault(case.suite, Counter())[case.spec.level] += 1
    return out


__all__ = ["LEVELS", "area_level_counts"]
