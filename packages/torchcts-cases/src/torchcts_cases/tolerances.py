"""Per-dtype tolerances for comparing a device result with the CPU reference.

Integers and bool compare exactly; float16 and bfloat16 are looser than float32 because
devices legitimately accumulate in different orders. A manifest's ``TOLERANCES`` can
override a dtype for every op, or one op in one dtype.
"""

from __future__ import annotations

from typing import Any

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


def tolerance_for(
    dtype: str,
    op: str | None = None,
    overrides: dict[str, Any] | None = None,
    case_default: dict[str, tuple[float, float]] | None = None,
) -> tuple[float, float]:
    """(atol, rtol) for comparing values of `dtype` produced by `op`.

    Precedence: manifest per-op, manifest per-dtype, the case's own documented
    tolerance (`case_default`, e.g. a few optimizer steps), the default table, exact.
    """
    atol, rtol = (case_default or {}).get(dtype) or DEFAULT_TOLERANCES.get(dtype, EXACT)
    overrides = overrides or {}
    for pair in (
        overrides.get("dtypes", {}).get(dtype),
        (overrides.get("ops", {}).get(op) or {}).get(dtype) if op else None,
    ):
        if pair:
            atol = float(pair.get("atol", atol))
            rtol = float(pair.get("rtol", rtol))
    return atol, rtol
