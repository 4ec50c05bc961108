"""The dispatcher overloads a case reaches, for its record: from the coverage trace.

A record names the overloads its case's CPU run dispatched (``aten::add.Tensor``,
``aten::add.out``), so a known-crash rule and the backend evidence store can speak
of one overload instead of an OpInfo op. Nothing is traced at run time: the cached
or packaged trace (`coverage_trace.load`) is read once per process, and a case it
does not hold keeps the surfaces it declares (OpInfo: the op's aten packets).
"""

from __future__ import annotations

import functools

from torchcts_cases.spec import CaseSpec
from torchcts_cases.trace_store import StoredTrace


@functools.cache
def _trace() -> StoredTrace | None:
    from torchcts_cases import coverage_trace

    try:
        return coverage_trace.load()
    except OSError:  # an unreadable cache is a trace not built: declared surfaces
        return None


def reached_overloads(case_id: str) -> tuple[str, ...] | None:
    """The overloads the trace saw `case_id` reach; None when it holds no such case."""
    trace = _trace()
    return None if trace is None else trace.reached(case_id)


def case_surfaces(spec: CaseSpec) -> tuple[str, ...]:
    """What a record of `spec` names as its surfaces: the overloads it reached, or
    the surfaces it declares when the trace does not hold it."""
    reached = reached_overloads(spec.case_id)
    return spec.surfaces if reached is None else reached


def forget() -> None:
    """Read the trace again on next use (tests, and after a build in-process)."""
    _trace.cache_clear()


__all__ = ["case_surfaces", "forget", "reached_overloads"]
