"""The manifest's ``RESOURCE_LIMITS``: its keys, the range of each, and their check.

Every limit has a largest value as well as a smallest. Unbounded, a typo or a crafted
manifest passed the check and then reached the platform's own limits mid-run: a
``case_timeout_s`` of ``1e10`` overflowed ``setitimer``'s ``time_t`` (a run that died
in a traceback), and a ``memory_mb`` of ``10**30`` overflowed ``RLIMIT_AS`` in every
case, each then recorded as an ``error`` blamed on the backend. A value out of range
is a manifest error instead, one line before anything runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from torchcts_schema.errors import ManifestError

# a week: room for the slowest simulator's case, and far inside every platform's
# timer range (setitimer takes a time_t)
MAX_LIMIT_SECONDS = 7 * 24 * 3600
# 64 TiB, in MiB: more than any one host's memory, and the address-space cap it
# becomes (today's size plus this) stays far inside RLIMIT_AS's rlim_t
MAX_MEMORY_MB = 64 * 1024 * 1024
MAX_WORKERS = 1024

# the largest value of each key; the smallest is above 0, or 1 for a whole number
RESOURCE_LIMIT_MAX: dict[str, int] = {
    "case_timeout_s": MAX_LIMIT_SECONDS,
    "memory_mb": MAX_MEMORY_MB,
    "workers": MAX_WORKERS,
    "hang_heartbeat_s": MAX_LIMIT_SECONDS,
}
RESOURCE_LIMIT_KEYS = tuple(RESOURCE_LIMIT_MAX)
# counts, not measures: the runner takes int() of them, so 0.5 would mean no cap
WHOLE_NUMBER_LIMITS = ("memory_mb", "workers")


def check_limits(value: Any, path: Path) -> dict[str, float]:
    """`value` as ``RESOURCE_LIMITS``; the first key out of range raises
    `ManifestError` naming the key, the value and the range."""
    if not isinstance(value, dict):
        raise ManifestError(path, "RESOURCE_LIMITS must be a dict")
    for key, number in value.items():
        if key not in RESOURCE_LIMIT_MAX:
            raise ManifestError(
                path,
                f"RESOURCE_LIMITS: unknown key {key!r:.60} "
                f"(known: {', '.join(RESOURCE_LIMIT_KEYS)})",
            )
        problem = range_problem(key, number)
        if problem:
            raise ManifestError(
                path, f"RESOURCE_LIMITS.{key}: {number!r:.60} {problem}"
            )
    return dict(value)


def range_problem(key: str, number: Any) -> str | None:
    """Why `number` is not a value of `key` (None: it is); the one range rule, for
    the manifest and for the options that override it."""
    most = RESOURCE_LIMIT_MAX[key]
    if key in WHOLE_NUMBER_LIMITS:
        if isinstance(number, bool) or not isinstance(number, int):
            return f"is not a whole number (1 to {most:,})"
        if not 1 <= number <= most:
            return f"is out of range (1 to {most:,})"
        return None
    if isinstance(number, bool) or not isinstance(number, int | float):
        return f"is not a number (above 0, at most {most:,})"
    if not (math.isfinite(number) and 0 < number <= most):
        return f"is out of range (above 0, at most {most:,} seconds)"
    return None
