"""Per-dtype tolerances for comparing a device result with the CPU reference, and
where each one came from.

Integers and bool compare exactly; float16 and bfloat16 are looser than float32 because
devices legitimately accumulate in different orders. A hand case's reviewed reference
may carry its own tolerance; a manifest's ``TOLERANCES`` can override a dtype for every
op, or one op in one dtype. Every judged result records the tolerance it was judged
with (`ToleranceUsed`), and a result that passes only because the manifest widened its
tolerance says so (``override_needed``), so widening a tolerance is never silent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from torchcts_schema import OVERRIDE_SOURCES, ToleranceSource, ToleranceUsed, Verdict

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    # dtype: (atol, rtol)
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1e-5, 1.3e-5),
    "complex64": (1e-5, 1.3e-5),
    "float16": (1e-3, 1e-3),
    "complex32": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1.6e-2),
    "float8_e4m3fn": (0.125, 0.125),
    "float8_e5m2": (0.25, 0.25),
}
EXACT = (0.0, 0.0)
Tolerance = Callable[[str], tuple[float, float]]


def resolve_tolerance(
    dtype: str,
    op: str | None = None,
    overrides: dict[str, Any] | None = None,
    reviewed: tuple[float, float] | None = None,
    documented: dict[str, tuple[float, float]] | None = None,
) -> ToleranceUsed:
    """The tolerance for values of `dtype` produced by `op`, with its source.

    Precedence: manifest per-op, manifest per-dtype, the reviewed reference's own,
    the case's documented per-dtype tolerance (a few optimizer steps, a model block),
    the default table (exact for dtypes it does not name).
    """
    atol, rtol = DEFAULT_TOLERANCES.get(dtype, EXACT)
    source = ToleranceSource.DEFAULT_TABLE
    if documented and dtype in documented:
        (atol, rtol), source = documented[dtype], ToleranceSource.CASE_DOCUMENTED
    if reviewed is not None:
        (atol, rtol), source = reviewed, ToleranceSource.REVIEWED_REFERENCE
    overrides = overrides or {}
    for pair, where in (
        (overrides.get("dtypes", {}).get(dtype), ToleranceSource.MANIFEST_DTYPE),
        (
            (overrides.get("ops", {}).get(op) or {}).get(dtype) if op else None,
            ToleranceSource.MANIFEST_OP,
        ),
    ):
        if pair:
            atol = pair.get("atol", atol)
            rtol = pair.get("rtol", rtol)
            source = where
    return ToleranceUsed(dtype, float(atol), float(rtol), source)


def tolerance_for(
    dtype: str,
    op: str | None = None,
    overrides: dict[str, Any] | None = None,
    reviewed: tuple[float, float] | None = None,
    documented: dict[str, tuple[float, float]] | None = None,
) -> tuple[float, float]:
    """(atol, rtol) for comparing values of `dtype` produced by `op`."""
    used = resolve_tolerance(dtype, op, overrides, reviewed, documented)
    return used.atol, used.rtol


def judge_with_provenance(
    mismatch_under: Callable[[Tolerance], str | None],
    dtype: str | None,
    op: str | None,
    overrides: dict[str, Any] | None,
    reviewed: tuple[float, float] | None = None,
    documented: dict[str, tuple[float, float]] | None = None,
) -> Verdict:
    """The verdict of `mismatch_under` (a comparison run with a tolerance lookup),
    carrying the tolerance of the case's `dtype` (else the first one looked up).

    A pass that used a manifest override is judged again under the defaults; when
    it fails there, the tolerance says ``override_needed``. Only such passes pay for
    the second comparison.
    """
    asked: dict[str, ToleranceUsed] = {}

    def lookup(name: str) -> tuple[float, float]:
        used = asked.setdefault(
            name, resolve_tolerance(name, op, overrides, reviewed, documented)
        )
        return used.atol, used.rtol

    mismatch = mismatch_under(lookup)
    used = asked.get(dtype) if dtype else None
    used = used or next(iter(asked.values()), None)
    widened = [u for u in asked.values() if u.source in OVERRIDE_SOURCES]
    if mismatch is None and widened:

        def baseline(name: str) -> tuple[float, float]:
            return tolerance_for(name, None, None, reviewed, documented)

        if mismatch_under(baseline) is not None:
            first = used if used in widened else widened[0]
            used = replace(first, override_needed=True)
    return Verdict(ok=mismatch is None, mismatch=mismatch, tolerance=used)
