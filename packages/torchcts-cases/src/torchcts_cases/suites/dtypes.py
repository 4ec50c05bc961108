"""Casts and reinterpreting views in the dtypes beyond the everyday ones: complex64 and
complex128, uint16/uint32/uint64, float8_e4m3fn and float8_e5m2 (suite ``dtypes``).

OpInfo covers few ops in these dtypes, and their bugs sit where values change
representation: a uint64 above 2**63 cast through a signed type, a float8 rounding
mode or saturation rule, a complex cast that keeps the wrong part. Every case runs in
the dtype it is about, so the manifest's DTYPES decide what runs (a dtype set to False
is not_run: dtype_not_supported; a regex claims cases by name).

Casts are judged bit for bit (`exact`): the CPU's result is the expectation, including
its saturation and rounding rules (float32 -> float8_e4m3fn saturates at +-448, even
for inf; float8_e5m2 overflows to inf; ties round to even). Casts whose result C++
leaves undefined are not made: NaN or inf to an integer, a negative or out-of-range
float to an unsigned type.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from torchcts_cases.suites.base import case, exact, storage_id

SUITE = "dtypes"
COMPLEX = ("complex64", "complex128")
UNSIGNED = ("uint16", "uint32", "uint64")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
NAN, INF = float("nan"), float("inf")


def _quiet(fn: Any) -> Any:
    """`fn()` without the warning complex -> real casts give (discarding imag is the
    behaviour under test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn()


@case(SUITE, "complex_casts", 2, dtypes=COMPLEX, surfaces=("aten::_to_copy",))
def complex_casts(device: str, dtype: str | None) -> dict[str, Any]:
    """complex <-> float32/float64/int64/bool and complex64 <-> complex128 on the
    device: the real part kept, int64 truncated toward zero, rounding and inf/NaN."""
    d = getattr(torch, dtype or "complex64")
    other = torch.complex128 if d == torch.complex64 else torch.complex64
    real = torch.float32 if d == torch.complex64 else torch.float64
    values = [1.7 - 2.5j, -3.9 + 1j, 1e20 + 0j, complex(NAN, 1), complex(INF, -0.0)]
    z = torch.tensor([*values, complex(-0.0, 0.0), 0.1 + 0.2j], dtype=d).to(device)
    floats = torch.tensor([0.1, -2.5, 1e30, INF, NAN, -0.0]).to(device)
    ints = torch.tensor([0, -7, 2**24 + 1, 2**53 + 1, -(2**62)]).to(device)
    parts = torch.tensor([0.5, -1.25, 3e-8]).to(device, real)
    return {
        "to_float32": exact(_quiet(lambda: z.to(torch.float32))),
        "to_float64": exact(_quiet(lambda: z.to(torch.float64))),
        "to_int64": _quiet(lambda: z[:2].to(torch.int64)),  # finite, in range
        "to_bool": z.to(torch.bool),
        "to_other_complex": exact(z.to(other)),
        "from_float32": exact(floats.to(d)),
        "from_int64": exact(ints.to(d)),
        "from_parts": exact(torch.complex(parts, parts.flip(0))),
        "host_to_device": exact(torch.tensor([1.1, -2.0]).to(device, d)),
    }


def _unsigned_values(d: torch.dtype) -> torch.Tensor:
    """Values of `d` that only an unsigned type holds (above the signed maximum),
    and ones that round when widened to float32."""
    top = 2 ** (8 * d.itemsize)
    values = [0, 7, top // 2 - 1, top // 2, top // 2 + 1, top - 1, 40000]
    if top > 2**24:
        values += [2**24 + 1, 2**24 + 3]
    if top > 2**53:
        values += [2**53 + 1, 2**63 + 2**40 + 1]
    return torch.tensor(values, dtype=d)


def _in_range_floats(d: torch.dtype) -> torch.Tensor:
    """float32 values a cast to `d` defines: non-negative, below 2**bits; the largest
    float32 below each bound, and (uint64) values above 2**63."""
    values = [0.0, 0.5, 1.9, 255.5, 65535.9]
    if d != torch.uint16:
        values += [65536.0, 4294967040.0]
    if d == torch.uint64:
        values += [1e19, 2.0**63, 1.8446742e19]
    return torch.tensor(values)


@case(SUITE, "unsigned_casts", 3, dtypes=UNSIGNED, surfaces=("aten::_to_copy",))
def unsigned_casts(device: str, dtype: str | None) -> dict[str, Any]:
    """int64 -> uintN wraps modulo 2**N; uintN -> int64 keeps the bits (uint64 above
    2**63 turns negative); int16 -> uintN sign-extends then wraps, uintN -> int32/uint8
    zero-extends or wraps; float32 -> uintN truncates toward zero; uintN -> float32
    rounds to nearest even."""
    d = getattr(torch, dtype or "uint16")
    ints = torch.tensor(
        [0, 1, -1, 65535, 65536, 70000, -70000, 2**31, 2**32 + 5, 2**63 - 1, -(2**63)]
    )
    wide = _unsigned_values(d).to(device)
    return {
        "from_int64": ints.to(device).to(d),
        "to_int64": wide.to(torch.int64),
        "from_int16": torch.tensor([-1, -32768, 5], dtype=torch.int16).to(device).to(d),
        "to_int32": wide.to(torch.int32),
        "to_uint8": wide.to(torch.uint8),
        "to_bool": wide.to(torch.bool),
        "from_float32": _in_range_floats(d).to(device).to(d),
        "to_float32": exact(wide.to(torch.float32)),
        "to_float64": exact(wide.to(torch.float64)),
        "host_to_device": torch.tensor([3, 65535]).to(device, d),
    }


def _float8_inputs() -> torch.Tensor:
    """float32 values at float8's edges: signed zero, ties (1.0625 and 1.1875 in
    e4m3fn), subnormals and half the smallest one, each format's maximum and the
    ties and overflows past it, inf and NaN."""
    normal = [0.0, -0.0, 1.0, 1.0625, 1.1875, 1.2, -3.3, 0.1]
    subnormal = [2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17]
    top = [240.0, 448.0, 449.0, 464.0, 480.0, -500.0, 57344.0, 61439.0, 61440.0, 1e6]
    return torch.tensor([*normal, *subnormal, *top, INF, -INF, NAN])


@case(SUITE, "float8_casts", 3, dtypes=FLOAT8, surfaces=("aten::_to_copy",))
def float8_casts(device: str, dtype: str | None) -> dict[str, Any]:
    """float32/float64/bfloat16/float16/int64 -> float8 rounds to nearest even and
    saturates or overflows as the CPU does; float8 -> float32, bfloat16, float16 and
    the other float8 are exact or round the same way; float8 -> int64 truncates."""
    d = getattr(torch, dtype or "float8_e4m3fn")
    other = torch.float8_e5m2 if d == torch.float8_e4m3fn else torch.float8_e4m3fn
    f32 = _float8_inputs().to(device)
    f8 = f32.to(d)
    finite = torch.tensor([1.5, -2.75, 300.0, 0.4, -0.9]).to(d).to(device)
    return {
        "from_float32": exact(f8),
        "from_float64": exact(f32.double().to(d)),
        "from_bfloat16": exact(f32.to(torch.bfloat16).to(d)),
        "from_float16": exact(f32.to(torch.float16).to(d)),
        "from_int64": exact(
            torch.tensor([0, 1, 17, -3, 1000, 100000]).to(device).to(d)
        ),
        "to_float32": exact(f8.to(torch.float32)),
        "to_bfloat16": exact(f8.to(torch.bfloat16)),
        "to_float16": exact(f8.to(torch.float16)),
        "to_other_float8": exact(f8.to(other)),
        "to_int64": finite.to(torch.int64),
        "to_bool": f8.to(torch.bool),
    }


@case(SUITE, "float8_codes", 3, dtypes=FLOAT8, surfaces=("aten::_to_copy",))
def float8_codes(device: str, dtype: str | None) -> dict[str, Any]:
    """Every one of the 256 float8 codes decodes to the CPU's float32 value, and
    encodes back to the same code (NaN codes to NaN)."""
    d = getattr(torch, dtype or "float8_e4m3fn")
    codes = torch.arange(256, dtype=torch.uint8).to(device).view(d)
    decoded = codes.to(torch.float32)
    return {"decoded": exact(decoded), "encoded_back": exact(decoded.to(d))}


def _reinterpreted_as(d: torch.dtype) -> torch.dtype:
    """A dtype of the same element size and another kind, for view(dtype)."""
    if d.is_complex:
        return torch.int64 if d.itemsize == 8 else torch.float64
    if d.is_floating_point:
        return torch.int8
    return {2: torch.int16, 4: torch.float32, 8: torch.float64}[d.itemsize]


@case(SUITE, "dtype_views", 3, dtypes=COMPLEX + UNSIGNED + FLOAT8)
def dtype_views(device: str, dtype: str | None) -> dict[str, Any]:
    """view(dtype) reinterprets bytes in place on the device: bytes viewed as the
    dtype, the dtype viewed back as bytes and as a same-size dtype of another kind;
    the last dimension scales by the size ratio and storage stays shared."""
    d = getattr(torch, dtype or "uint16")
    raw = (torch.arange(64, dtype=torch.int64) * 37 + 11).remainder(256)
    data = raw.to(torch.uint8).to(device)
    as_dtype = data.view(d)
    grid = data.reshape(4, 16).view(d)
    same_size = _reinterpreted_as(d)
    return {
        "as_dtype": exact(as_dtype),
        "bytes_back": as_dtype.view(torch.uint8),
        "same_size": exact(as_dtype.view(same_size)),
        "grid_shape": list(grid.shape),
        "grid_strides": list(grid.stride()),
        "grid_row": exact(grid[2]),
        "shares_storage": storage_id(as_dtype) == storage_id(data)
        and storage_id(grid) == storage_id(data),
    }


def _raised(fn: Any) -> str | None:
    """The type name of what `fn()` raised, None when it returned."""
    try:
        fn()
    except Exception as exc:
        return type(exc).__name__
    return None


@case(SUITE, "complex_views", 3, dtypes=COMPLEX, surfaces=("aten::view_as_real",))
def complex_views(device: str, dtype: str | None) -> dict[str, Any]:
    """view_as_real / view_as_complex / .real / .imag alias the complex tensor (writes
    go through); view(float) doubles the last dimension; a conjugated view refuses
    view_as_real until resolved, as on CPU."""
    d = getattr(torch, dtype or "complex64")
    real = torch.float32 if d == torch.complex64 else torch.float64
    z = torch.tensor([[1 + 2j, -3 + 0.5j], [0.25 - 1j, 4 + 0j]], dtype=d).to(device)
    pairs = torch.view_as_real(z)
    pairs[0, 1, 1] = 9.0  # the imaginary part of z[0, 1]
    z.real.mul_(2)
    z.imag[1].zero_()
    back = torch.view_as_complex(pairs)
    floats = z.view(real)
    return {
        "z": exact(z),
        "as_real": exact(pairs),
        "as_float": exact(floats),
        "float_shape": list(floats.shape),
        "aliases": [
            storage_id(t) == storage_id(z)
            for t in (pairs, back, z.real, z.imag, floats)
        ],
        "conj_view_as_real_raises": _raised(lambda: torch.view_as_real(z.conj())),
        "resolved_conj_as_real": exact(torch.view_as_real(z.conj().resolve_conj())),
    }


CASES = (
    complex_casts,
    unsigned_casts,
    float8_casts,
    float8_codes,
    dtype_views,
    complex_views,
)
