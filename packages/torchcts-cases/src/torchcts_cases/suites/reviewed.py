"""Reviewed references: expected values written by hand from PyTorch's documented
semantics, for results where "whatever CPU does" is not a good enough oracle (sign
conventions, rounding, NaN propagation, empty reductions, documented tie-breaking).
"""

from __future__ import annotations

from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case

SUITE = "reviewed"
NAN = float("nan")


def _t(values: list[Any], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def _expect_division(dtype: str | None) -> dict[str, Any]:
    return {
        "floor_divide": _t([-4.0, 3.0, -3.0, 2.0]),
        "remainder": _t([1.0, 1.0, -2.0, -1.0]),
        "fmod": _t([-1.0, 1.0, 2.0, -2.0]),
        "trunc_div": _t([-3.0, 3.0, -2.0, 2.0]),
    }


@case(
    SUITE,
    "division_signs",
    1,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_division,
    surfaces=("aten::floor_divide", "aten::remainder.Tensor", "aten::fmod.Tensor"),
)
def division_signs(device: str, dtype: str | None) -> dict[str, Any]:
    """floor_divide and remainder follow the divisor's sign (Python); fmod the dividend's."""
    a = _t([-7.0, 7.0, 7.0, -7.0]).to(device)
    b = _t([2.0, 2.0, -3.0, -3.0]).to(device)
    return {
        "floor_divide": torch.floor_divide(a, b),
        "remainder": torch.remainder(a, b),
        "fmod": torch.fmod(a, _t([3.0, 3.0, 5.0, -5.0]).to(device)),
        "trunc_div": torch.div(a, b, rounding_mode="trunc"),
    }


def _expect_rounding(dtype: str | None) -> dict[str, Any]:
    return {
        "round": _t([0.0, 2.0, 2.0, -0.0, -2.0, 4.0]),
        "round_decimals": _t([1.2, 0.2, 0.8, -0.2]),
    }


@case(
    SUITE,
    "round_half_to_even",
    1,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_rounding,
    surfaces=("aten::round",),
)
def round_half_to_even(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.round rounds halves to even (banker's rounding)."""
    x = _t([0.5, 1.5, 2.5, -0.5, -2.5, 3.5]).to(device)
    return {
        "round": torch.round(x),
        "round_decimals": torch.round(
            _t([1.24, 0.25, 0.75, -0.25]).to(device), decimals=1
        ),
    }


def _expect_nan(dtype: str | None) -> dict[str, Any]:
    return {
        "max": NAN,
        "maximum": _t([NAN, 2.0]),
        "fmax": _t([1.0, 2.0]),
        "sum": NAN,
        "argmax": 1,
    }


@case(
    SUITE,
    "nan_propagation",
    2,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_nan,
    surfaces=("aten::max", "aten::maximum", "aten::fmax", "aten::argmax"),
)
def nan_propagation(device: str, dtype: str | None) -> dict[str, Any]:
    """max/maximum/sum propagate NaN, fmax ignores it, argmax points at the NaN."""
    x = _t([1.0, NAN, 0.5]).to(device)
    return {
        "max": x.max().item(),
        "maximum": torch.maximum(_t([NAN, 1.0]).to(device), _t([1.0, 2.0]).to(device)),
        "fmax": torch.fmax(_t([NAN, 1.0]).to(device), _t([1.0, 2.0]).to(device)),
        "sum": x.sum().item(),
        "argmax": int(x.argmax().item()),
    }


def _expect_empty(dtype: str | None) -> dict[str, Any]:
    return {
        "sum": 0.0,
        "prod": 1.0,
        "amax_error": "IndexError|RuntimeError",
        "sum_dim": _t([0.0, 0.0, 0.0]),
    }


@case(
    SUITE,
    "empty_reductions",
    2,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_empty,
    surfaces=("aten::sum", "aten::prod", "aten::amax"),
)
def empty_reductions(device: str, dtype: str | None) -> dict[str, Any]:
    """Reductions over zero elements give their identity; amax has none and raises."""
    e = torch.empty(0, device=device)
    try:
        e.amax()
        amax_error = None
    except (IndexError, RuntimeError):
        amax_error = "IndexError|RuntimeError"
    return {
        "sum": e.sum().item(),
        "prod": e.prod().item(),
        "amax_error": amax_error,
        "sum_dim": torch.empty(3, 0, device=device).sum(1),
    }


def _expect_ties(dtype: str | None) -> dict[str, Any]:
    return {"argmax": 1, "argmin": 0, "max_dim_index": [1, 0]}


@case(
    SUITE,
    "documented_tie_breaking",
    2,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_ties,
    surfaces=("aten::argmax", "aten::argmin", "aten::max.dim"),
)
def documented_tie_breaking(device: str, dtype: str | None) -> dict[str, Any]:
    """argmax/argmin and max(dim) return the first index of tied extremes (documented)."""
    x = _t([1.0, 5.0, 5.0, 1.0]).to(device)
    m = _t([[0.0, 3.0, 3.0], [2.0, 2.0, 1.0]]).to(device)
    return {
        "argmax": int(x.argmax().item()),
        "argmin": int(x.argmin().item()),
        "max_dim_index": m.max(dim=1).indices.to("cpu").tolist(),
    }


def _expect_integer(dtype: str | None) -> dict[str, Any]:
    return {
        "floor_divide": _t([-4, 3, -3], torch.int64),
        "remainder": _t([1, 1, -1], torch.int64),
        "int8_wrap": _t([-128, 127], torch.int8),
        "true_div_dtype": "torch.float32",
    }


@case(
    SUITE,
    "integer_semantics",
    1,
    capability="forward",
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_expect_integer,
    surfaces=("aten::floor_divide", "aten::remainder.Tensor", "aten::add.Tensor"),
)
def integer_semantics(device: str, dtype: str | None) -> dict[str, Any]:
    """Integer floor division and remainder round toward -inf; int8 add wraps around."""
    a = _t([-7, 7, 8], torch.int64).to(device)
    b = _t([2, 2, -3], torch.int64).to(device)
    i8 = _t([127, -128], torch.int8).to(device)
    return {
        "floor_divide": torch.floor_divide(a, b),
        "remainder": torch.remainder(a, b),
        "int8_wrap": i8 + _t([1, -1], torch.int8).to(device),
        "true_div_dtype": str((a / b).dtype),
    }


CASES = (
    division_signs,
    round_half_to_even,
    nan_propagation,
    empty_reductions,
    documented_tie_breaking,
    integer_semantics,
)
