"""Comparisons, arithmetic and reductions in complex, unsigned and float8 dtypes (suite
``dtypes``), limited to the ops the CPU has kernels for in each: the CPU run is the
expectation, so an op the CPU cannot run has none.

Kernels on the CPU of torch 2.13 (probed; `tests/test_dtypes_suite.py` pins the
missing ones, so a torch that adds a kernel is noticed):

- complex64/complex128: eq, ne, isclose, isnan/isinf/isfinite, arithmetic, exp, log,
  sqrt, abs, angle, sgn, conj, sum, mean, prod, cumsum, matmul. No ordering (lt, le,
  gt, ge, max, min, sort, clamp) and no floor_divide or remainder.
- uint16/uint32/uint64: eq, ne, mul, bitwise and/or/xor, sort, argsort, unique, sum,
  prod, cumsum (into int64), true division (into float32), where, cat. No add, sub,
  neg, lt/gt, max/min, bitwise_not, shifts, index_select, gather, masked_fill, isin.
- float8_e4m3fn/float8_e5m2: eq, ne, isnan, mul, abs, matmul, where, cat,
  index_select; isinf and isfinite in e5m2 only (e4m3fn has no infinities). No add,
  sub, div, neg, ordering, sum or other reductions.

Integer and float8 results are judged bit for bit. Complex arithmetic is judged with
the default complex tolerance (complex64 atol 1e-5 rtol 1.3e-5, complex128 1e-7):
devices legitimately compute complex products (fused multiply-add), division, exp,
log and reductions with other algorithms and orders; complex add, sub and negation
round once per part and are judged bit for bit. float8 matmul is judged with the
float8 tolerance (e4m3fn 0.125, e5m2 0.25: one step of the format), as accumulation
order and width legitimately differ.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case, exact

SUITE = "dtypes"
COMPLEX = ("complex64", "complex128")
UNSIGNED = ("uint16", "uint32", "uint64")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
NAN, INF = float("nan"), float("inf")


@case(SUITE, "complex_compare", 3, dtypes=COMPLEX, surfaces=("aten::eq.Tensor",))
def complex_compare(device: str, dtype: str | None) -> dict[str, Any]:
    """eq, ne, isclose, equal and isnan/isinf/isfinite on complex values with NaN,
    inf and signed zeros in either part; where picks by a complex comparison."""
    d = getattr(torch, dtype or "complex64")
    a = [1 + 2j, complex(NAN, 0), complex(INF, 1), 0j, complex(-0.0, 0), 3 - 4j]
    b = [1 + 2j, complex(NAN, 0), complex(INF, 1), complex(-0.0, -0.0), 0j, 3 + 4j]
    x = torch.tensor(a, dtype=d).to(device)
    y = torch.tensor(b, dtype=d).to(device)
    return {
        "eq": x == y,
        "ne": x != y,
        "eq_scalar": x == (3 - 4j),
        "isclose": torch.isclose(x, y),
        "isclose_nan": torch.isclose(x, y, equal_nan=True),
        "equal_self": torch.equal(x, x),  # NaN is not equal to itself
        "equal_finite": torch.equal(x[3:5], y[3:5]),  # signed zeros are equal
        "isnan": x.isnan(),
        "isinf": x.isinf(),
        "isfinite": x.isfinite(),
        "where": exact(torch.where(x == y, x, torch.zeros_like(y))),
    }


@case(SUITE, "complex_conj", 3, dtypes=COMPLEX, surfaces=("aten::conj_physical.out",))
def complex_conj(device: str, dtype: str | None) -> dict[str, Any]:
    """conj() is a lazy view (conj bit set, no copy) whose values, imaginary part and
    resolution negate the imaginary part exactly; conj_physical and conj_physical_
    compute it; conj of conj clears the bit."""
    d = getattr(torch, dtype or "complex64")
    z = torch.tensor([1 + 2j, -3 - 0.5j, 0.25 + 0j, complex(0.0, -0.0)], dtype=d)
    z = z.to(device)
    lazy = z.conj()
    in_place = z.clone()
    in_place.conj_physical_()
    return {
        "is_conj": [lazy.is_conj(), lazy.conj().is_conj(), z.conj_physical().is_conj()],
        "lazy": exact(lazy),
        "lazy_imag": exact(lazy.imag),
        "resolved": exact(lazy.resolve_conj()),
        "conj_physical": exact(z.conj_physical()),
        "conj_physical_": exact(in_place),
        "conj_conj": exact(lazy.conj()),
        "times_conj": z * lazy,  # |z|^2 + 0j, within the complex tolerance
    }


def _complex_operands(d: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(16)
    return torch.randn(8, generator=g, dtype=d), torch.randn(8, generator=g, dtype=d)


@case(SUITE, "complex_arithmetic", 4, dtypes=COMPLEX, surfaces=("aten::mul.Tensor",))
def complex_arithmetic(device: str, dtype: str | None) -> dict[str, Any]:
    """Complex add/sub/neg (bit for bit) and mul, div, reciprocal, abs, angle, sgn,
    exp, log, sqrt, pow, matmul and reductions (within the complex tolerance)."""
    d = getattr(torch, dtype or "complex64")
    host_a, host_b = _complex_operands(d)
    a, b = host_a.to(device), host_b.to(device)
    return {
        "add": exact(a + b),
        "sub": exact(a - b),
        "neg": exact(-a),
        "add_scalar": exact(a + 1j),
        "mul": a * b,
        "mul_real_scalar": a * 2.5,
        "div": a / b,
        "reciprocal": a.reciprocal(),
        "abs": a.abs(),
        "angle": a.angle(),
        "sgn": a.sgn(),
        "exp": a.exp(),
        "log": a.log(),
        "sqrt": a.sqrt(),
        "pow": a.pow(2),
        "matmul": a.reshape(2, 4) @ b.reshape(4, 2),
        "sum": a.sum(),
        "mean": a.mean(),
        "prod": a.prod(),
        "cumsum": a.cumsum(0),
    }


def _unsigned_pair(d: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Operands with values above the signed maximum and products that wrap."""
    top = 2 ** (8 * d.itemsize)
    a = [0, 1, top // 2, top - 1, 300, 40000, top // 2 + 7, 12345]
    b = [0, 2, top // 2, top - 2, 300, 3, top // 2 + 7, 1]
    return torch.tensor(a, dtype=d), torch.tensor(b, dtype=d)


@case(SUITE, "unsigned_compare", 4, dtypes=UNSIGNED, surfaces=("aten::sort.values",))
def unsigned_compare(device: str, dtype: str | None) -> dict[str, Any]:
    """eq, ne, equal and where on values above the signed maximum; sort, argsort and
    unique order them as unsigned (2**(N-1) after 2**(N-1)-1, not first)."""
    d = getattr(torch, dtype or "uint16")
    host_a, host_b = _unsigned_pair(d)
    a, b = host_a.to(device), host_b.to(device)
    top = 2 ** (8 * d.itemsize)
    ordered = torch.tensor([top // 2, 1, top - 1, 0, top // 2 - 1, 5], dtype=d)
    values, indices = ordered.to(device).sort()
    return {
        "eq": a == b,
        "ne": a != b,
        "eq_scalar": a == top // 2,
        "equal": [torch.equal(a, a), torch.equal(a, b)],
        "where": torch.where(a == b, a, b),
        "sort": (values, indices),
        "sort_descending": ordered.to(device).sort(descending=True).values,
        "argsort": ordered.to(device).argsort(),
        "unique": torch.unique(torch.cat([a, b])),
    }


@case(SUITE, "unsigned_arithmetic", 4, dtypes=UNSIGNED, surfaces=("aten::mul.Tensor",))
def unsigned_arithmetic(device: str, dtype: str | None) -> dict[str, Any]:
    """mul wraps modulo 2**N; bitwise and/or/xor; sum, prod and cumsum accumulate in
    int64 (uint64 above 2**63 as negative int64); true division gives float32; cat keeps the dtype."""
    d = getattr(torch, dtype or "uint16")
    host_a, host_b = _unsigned_pair(d)
    a, b = host_a.to(device), host_b.to(device)
    small = torch.tensor([7, 100, 65535, 1], dtype=d).to(device)
    head = a[:6]  # its sums stay inside int64 for uint64 too (no signed overflow)
    return {
        "mul": a * b,
        "mul_scalar": a * 3,
        "and": a & b,
        "or": a | b,
        "xor": a ^ b,
        "sum": head.sum(),
        "sum_dim": a.reshape(2, 4).sum(1),
        "prod": small.prod(),
        "cumsum": head.cumsum(0),
        "true_divide": small / torch.tensor([2, 3, 7, 1], dtype=d).to(device),
        "cat": torch.cat([a, b]),
    }


def _float8_values(d: torch.dtype) -> list[float]:
    top = 448.0 if d == torch.float8_e4m3fn else 57344.0
    return [0.0, -0.0, 1.0, NAN, top, 0.5, -2.0, 0.015625]


@case(SUITE, "float8_compare", 4, dtypes=FLOAT8, surfaces=("aten::eq.Tensor",))
def float8_compare(device: str, dtype: str | None) -> dict[str, Any]:
    """eq and ne (+0 equals -0, NaN equals nothing), equal, isnan, where; isinf and
    isfinite in e5m2 (e4m3fn has no infinities and the CPU no kernel for them)."""
    d = getattr(torch, dtype or "float8_e4m3fn")
    a = torch.tensor(_float8_values(d)).to(d).to(device)
    b = torch.tensor([-0.0, 0.0, 1.0, NAN, -1.0, 0.25, -2.0, 0.015625]).to(d)
    b = b.to(device)
    out: dict[str, Any] = {
        "eq": a == b,
        "ne": a != b,
        "eq_scalar": a == 1.0,
        # a copy, not a itself: equal(a, a) takes a NaN check with no float8 kernel
        "equal": [torch.equal(a[:3], b[:3]), torch.equal(a, a.clone())],
        "isnan": a.isnan(),
        "where": exact(torch.where(a == b, a, b)),
    }
    if d == torch.float8_e5m2:
        c = torch.tensor([INF, -INF, NAN, 1.0]).to(d).to(device)
        out["isinf"] = c.isinf()
        out["isfinite"] = c.isfinite()
    return out


@case(SUITE, "float8_arithmetic", 5, dtypes=FLOAT8, surfaces=("aten::mul.Tensor",))
def float8_arithmetic(device: str, dtype: str | None) -> dict[str, Any]:
    """mul and abs round once into float8 (bit for bit); matmul within the float8
    tolerance; cat, index_select, where and contiguous move codes unchanged."""
    d = getattr(torch, dtype or "float8_e4m3fn")
    g = torch.Generator().manual_seed(8)
    a = (torch.rand(4, 4, generator=g) * 8 - 4).to(d).to(device)
    b = (torch.rand(4, 4, generator=g) * 8 - 4).to(d).to(device)
    index = torch.tensor([3, 0, 2]).to(device)
    return {
        "mul": exact(a * b),
        "square": exact(a * a),
        "abs": exact(a.abs()),
        "matmul": a @ b,
        "cat": exact(torch.cat([a, b])),
        "index_select": exact(a.index_select(0, index)),
        "where": exact(torch.where(a == b, a, b)),
        "transposed": exact(a.t().contiguous()),
    }


CASES = (
    complex_compare,
    complex_conj,
    complex_arithmetic,
    unsigned_compare,
    unsigned_arithmetic,
    float8_compare,
    float8_arithmetic,
)
