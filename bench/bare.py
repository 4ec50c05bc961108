"""The bare calls of a selection: the CPU reference and the op on the device, nothing else.

This is the irreducible work of a run: what is left if every harness cost (pytest,
workers, journal, judging, reports) were free. Each case's inputs are built first and
not timed (where the case exposes them: OpInfo samples), then ``reference()`` and
``run_on(device)`` are timed together. The cases are selected by the same
``plan_cases`` call a run makes, in the run's order, in this (warm) process.

Beside it, the bare loop: the same cases as a hand-written checking loop would run
them (prepare, build the inputs, reference, device call, judge), timed whole. It is
what any suite that checks these cases pays before its own costs (pytest, journal,
records, reports); the OpInfo sample generator and the comparison are in it, not in
the bare calls.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BareCalls:
    """The serial sum of one selection's bare calls."""

    total_s: float
    cases: int
    raised: int  # cases whose reference or device call raised (timed up to the raise)
    loop_s: float = 0.0  # the bare loop's serial sum (see the module docstring)


def bare_calls(
    manifest_path: Path,
    *,
    level: int | None = None,
    op_globs: tuple[str, ...] = (),
    dtypes: tuple[str, ...] = (),
    shard: tuple[int, int] | None = None,
    device: str | None = None,
) -> BareCalls:
    """Time the bare calls of the cases a run with these options would execute."""
    from torchcts_runner.casesource import load_case_source
    from torchcts_runner.selection import plan_cases
    from torchcts_schema import load_manifest

    manifest = load_manifest(manifest_path)
    source = load_case_source("torchcts_cases")
    plan = plan_cases(
        source,
        manifest,
        level=level,
        dtypes=dtypes,
        suites=(),
        op_globs=op_globs,
        shard=shard,
        done=(),
        node_ids=(),
        record_outside=False,
        recheck=None,
    )
    source.module.warm_up(plan.to_run)
    where = device or manifest.device
    total = 0.0
    loop = 0.0
    raised = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what cases warn is theirs, not the bench's
        for spec in plan.to_run:
            begun = time.perf_counter()
            seconds, failed = _bare_call(source, spec, manifest, where)
            loop += time.perf_counter() - begun
            total += seconds
            raised += failed
    return BareCalls(total, len(plan.to_run), raised, loop)


def _bare_call(source: Any, spec: Any, manifest: Any, where: str) -> tuple[float, int]:
    """Seconds of one case's reference and device call, and 1 if either raised; the
    result is judged after the timed calls (the bare loop's share)."""
    prepared = source.prepare(spec, manifest)
    build = getattr(prepared, "item", None)
    try:
        if callable(build):
            build()  # the sample generator's work is not an op call
    except Exception:
        return 0.0, 1
    start = time.perf_counter()
    try:
        expected = prepared.reference()
        observed = prepared.run_on(where)
    except Exception:
        return time.perf_counter() - start, 1
    seconds = time.perf_counter() - start
    try:
        prepared.judge(expected, observed, metadata_only=False)
    except Exception:
        return seconds, 1
    return seconds, 0


__all__ = ["BareCalls", "bare_calls"]
