"""Turn how a case ended into exactly one of the seven statuses.

Pure: no torch, no pytest. The rules, in the order they are applied:

- an exception from the device path is ``unsupported`` only when the manifest claims
  the path, the CPU reference succeeded, and the exception is a NotImplementedError or
  its text matches one of the manifest's unsupported patterns; otherwise ``error``;
- a wrong verdict is ``failed``; a right one ``passed``, unless the case ran through
  the device's CPU fallback and the manifest forbids that (``CPU_FALLBACK =
  "forbid"``): then it is ``failed`` (implement_or_declare), naming the overloads;
- a harness or reference problem is ``error`` (never a backend pass or failure);
- a skip raised at run time is ``skipped``; a per-case time limit is ``crashed``.
"""

from __future__ import annotations

import re
import unittest
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from torchcts_schema import CrashInfo, NextFix, Status, default_next_fix

MESSAGE_LIMIT = 2000


@dataclass(frozen=True)
class Outcome:
    """The classified end of a case, before it becomes a `CaseRecord`."""

    status: Status
    exception_type: str | None = None
    exception_message: str | None = None
    mismatch: str | None = None
    detail: str | None = None
    crash: CrashInfo | None = None
    next_fix: NextFix | None = None

    def with_next_fix(self, *, harness_problem: bool = False) -> Outcome:
        """Fill in the default next-fix category when none was chosen."""
        if self.next_fix is not None:
            return self
        fix = default_next_fix(self.status, harness_problem=harness_problem)
        return Outcome(
            self.status,
            self.exception_type,
            self.exception_message,
            self.mismatch,
            self.detail,
            self.crash,
            fix,
        )


def exception_text(exc: BaseException) -> str:
    """``Type: message`` cut to a size that keeps records small."""
    text = str(exc).strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


def exception_type_name(exc: BaseException) -> str:
    """A qualified, stable exception type name (``torch.OutOfMemoryError``)."""
    kind = type(exc)
    module = kind.__module__
    return (
        kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    )


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def looks_unsupported(exc: BaseException, patterns: Sequence[str]) -> bool:
    """NotImplementedError, or a message matching one of `patterns`."""
    if isinstance(exc, NotImplementedError):
        return True
    text = f"{type(exc).__name__}: {exc}"
    return any(p.search(text) for p in _compiled(tuple(patterns)))


def is_runtime_skip(exc: BaseException) -> bool:
    """A skip raised while running (unittest.SkipTest or pytest's Skipped)."""
    if isinstance(exc, unittest.SkipTest):
        return True
    return type(exc).__name__ == "Skipped" and type(exc).__module__.startswith(
        "_pytest"
    )


def classify_device_exception(
    exc: BaseException, *, claimed: bool, cpu_ok: bool, patterns: Sequence[str]
) -> Outcome:
    """An exception raised by the backend while running the case on the device."""
    name, message = exception_type_name(exc), exception_text(exc)
    if is_runtime_skip(exc):
        return Outcome(Status.SKIPPED, name, message, detail="skipped at run time")
    if claimed and cpu_ok and looks_unsupported(exc, patterns):
        return Outcome(
            Status.UNSUPPORTED,
            name,
            message,
            detail="the backend reported this claimed path as not implemented",
        )
    detail = "the backend raised an exception"
    if not claimed:
        detail += " on a path the manifest does not claim"
    elif not cpu_ok:
        detail += " and the CPU reference did not succeed"
    return Outcome(Status.ERROR, name, message, detail=detail)


def classify_harness_exception(exc: BaseException, stage: str) -> Outcome:
    """An exception from TorchCTS itself (preparing inputs, reference, judging)."""
    if is_runtime_skip(exc):
        return Outcome(
            Status.SKIPPED,
            exception_type_name(exc),
            exception_text(exc),
            detail=f"skipped while {stage}",
        )
    return Outcome(
        Status.ERROR,
        exception_type_name(exc),
        exception_text(exc),
        detail=f"harness problem while {stage} (not a backend result)",
    )


FALLBACK_NAMES_SHOWN = 10


def classify_verdict(
    ok: bool,
    mismatch: str | None,
    *,
    cpu_fallback: Sequence[str] = (),
    fallback_policy: str = "allow",
) -> Outcome:
    """The judged result of a case that ran to completion; `cpu_fallback` names the
    overloads that ran through the device's CPU fallback on the way."""
    if not ok:
        return Outcome(
            Status.FAILED, mismatch=mismatch or "result differs from expected"
        )
    if cpu_fallback and fallback_policy == "forbid":
        return Outcome(
            Status.FAILED,
            detail=forbidden_fallback_text(cpu_fallback),
            next_fix=NextFix.IMPLEMENT_OR_DECLARE,
        )
    return Outcome(Status.PASSED)


def forbidden_fallback_text(overloads: Sequence[str]) -> str:
    """Why a correct result failed: the overloads (the first few) that fell back."""
    names = ", ".join(overloads[:FALLBACK_NAMES_SHOWN])
    more = len(overloads) - FALLBACK_NAMES_SHOWN
    if more > 0:
        names += f" and {more} more"
    return (
        "passed only through the device's CPU fallback, which the manifest forbids "
        f"(CPU_FALLBACK = 'forbid'): {names}"
    )


def classify_timeout(limit_s: float, *, where: str) -> Outcome:
    """A case stopped by its per-case time limit."""
    from torchcts_schema import CrashKind

    detail = f"exceeded the {limit_s:g}s per-case limit ({where})"
    return Outcome(
        Status.CRASHED,
        detail=detail,
        crash=CrashInfo(kind=CrashKind.TIMEOUT, detail=detail),
    )


__all__ = [
    "Outcome",
    "classify_device_exception",
    "classify_harness_exception",
    "classify_timeout",
    "classify_verdict",
    "exception_text",
    "exception_type_name",
    "forbidden_fallback_text",
    "is_runtime_skip",
    "looks_unsupported",
]
