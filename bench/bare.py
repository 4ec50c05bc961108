"""The bare calls of a selection: the CPU reference and the op on the device, nothing else.

This is the irreducible work of a run: what is left if every harness cost (pytest,
workers, journal, judging, reports) were free. Each case's inputs are built first and
not timed (where the case exposes them: OpInfo samples), then ``reference()`` and
``run_on(device)`` are timed together. The cases are selected by the same
``plan_cases`` call a run makes, in the run's order, in this (warm) process.
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
    raised = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what cases warn is theirs, not the bench's
        for spec in plan.to_run:
            seconds, failed = _bare_call(source, spec, manifest, where)
            total += seconds
            raised += failed
    return BareCalls(total, len(plan.to_run), raised)


def _bare_call(source: Any, spec: Any, manifest: Any, where: str) -> tuple[float, int]:
    """Seconds of one case's reference and device call, and 1 if either raised."""
    prepared = source.prepare(spec, manifest)
    build = getattr(prepared, "item", None)
    try:
        if callable(build):
            build()  # the sample generator's work is not an op call
    except Exception:
        return 0.0, 1
    start = time.perf_counter()
    try:
        prepared.reference()
        prepared.run_on(where)
    except Exception:
        return time.perf_counter() - start, 1
    return time.perf_counter() - start, 0


__all__ = ["BareCalls", "bare_calls"]
