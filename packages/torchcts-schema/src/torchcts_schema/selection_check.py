"""Which selection filter matches no case of the manifest, with the closest names.

One check for every tool that selects by ``--op``, ``--dtype`` and ``--suite``
(``torchcts-run`` before anything runs, ``torchcts-cases list`` and ``show-skips``):
a typo is a line naming the filter, not an empty run or an empty listing.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence
from typing import Any


def unmatched_filter(
    selected: Any, op_globs: Sequence[str], dtypes: Sequence[str], suites: Sequence[str]
) -> str | None:
    """A selection filter that matches no case of the manifest (`selected` is the
    source's `SelectedCases`, every case recorded or counted), with the closest
    names (every such filter, in one line), so a typo is a line naming it, not an
    empty run or listing."""
    everything = [*selected.runnable, *selected.not_run]
    outside = list(getattr(selected, "outside", {}))
    # a source may match an op by its name without a variant ("div" selects
    # "div.no_rounding_mode"): every dot-prefix of an op counts as a name of it
    ops = {c.op for c in everything} | {op for _, op, _, _ in outside}
    names = {
        ".".join(op.split(".")[:n]) for op in ops for n in range(1, op.count(".") + 2)
    }
    checks = (
        ("--op", op_globs, names, True),
        (
            "--dtype",
            dtypes,
            {c.dtype for c in everything if c.dtype} | {d for *_, d, _ in outside if d},
            False,
        ),
        (
            "--suite",
            suites,
            {c.suite for c in everything} | {s for s, *_ in outside},
            False,
        ),
    )
    problems = []
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
            hint = f" (closest: {', '.join(close)})" if close else ""
            problems.append(f"{flag} {value!r} matches nothing in this manifest{hint}")
    return "; ".join(problems) or None


__all__ = ["unmatched_filter"]
