"""Compare an observed result with an expected one and say, in one line, what differs.

Results are nested Python structures (tensors, numbers, tuples, lists, dicts,
`RaisedError`). Value comparison uses the dtype's tolerance; a metadata comparison
(the meta device, uninitialised outputs) checks shape, dtype and strides only, or shape
and dtype only where strides are not part of the op's contract (`strides=False`).
"""

from __future__ import annotations

import cmath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchcts_cases.tolerances import tolerance_for

Tolerance = Callable[[str], tuple[float, float]]


@dataclass(frozen=True)
class RaisedError:
    """An exception as an expected or observed behaviour: its type and message."""

    type_name: str
    message: str
    mro: tuple[str, ...] = ()
    pattern: str | None = None  # OpInfo's regex the message must match, when known

    @classmethod
    def of(cls, exc: BaseException, pattern: str | None = None) -> RaisedError:
        """Capture an exception (only names and text: nothing device-bound is kept)."""
        names = tuple(k.__name__ for k in type(exc).__mro__)
        return cls(type(exc).__name__, str(exc).strip(), names, pattern)


def compare(
    expected: Any,
    observed: Any,
    *,
    metadata_only: bool = False,
    strides: bool = True,
    tolerance: Tolerance | None = None,
    path: str = "output",
) -> str | None:
    """None when `observed` matches `expected`; otherwise the first difference.

    `strides` applies to a metadata comparison: False leaves the strides of every
    tensor unjudged (values comparisons never judge them)."""
    tol = tolerance or (lambda d: tolerance_for(d))
    return _cmp(expected, observed, path, _Meta(metadata_only, strides), tol)


@dataclass(frozen=True)
class _Meta:
    """How a metadata comparison judges: `only` metadata, and whether `strides`."""

    only: bool
    strides: bool = True


def _cmp(exp: Any, obs: Any, path: str, meta: _Meta, tol: Tolerance) -> str | None:
    if isinstance(exp, RaisedError):
        return _cmp_error(exp, obs, path)
    if isinstance(obs, RaisedError):
        return (
            f"{path}: raised {obs.type_name}: {_short(obs.message)}; expected a result"
        )
    if isinstance(exp, torch.Tensor):
        if not isinstance(obs, torch.Tensor):
            return f"{path}: expected a tensor, got {type(obs).__name__}"
        return _cmp_tensor(exp, obs, path, meta, tol)
    if isinstance(exp, list | tuple):
        if not isinstance(obs, list | tuple):
            return f"{path}: expected a sequence, got {type(obs).__name__}"
        if len(exp) != len(obs):
            return f"{path}: expected {len(exp)} items, got {len(obs)}"
        for i, (e, o) in enumerate(zip(exp, obs, strict=True)):
            found = _cmp(e, o, f"{path}[{i}]", meta, tol)
            if found:
                return found
        return None
    if isinstance(exp, dict):
        if not isinstance(obs, dict) or set(exp) != set(obs):
            got = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            return f"{path}: expected keys {sorted(exp)}, got {got}"
        for key in exp:
            found = _cmp(exp[key], obs[key], f"{path}.{key}", meta, tol)
            if found:
                return found
        return None
    if isinstance(exp, float | complex) and not isinstance(exp, bool):
        if not isinstance(obs, int | float | complex) or isinstance(obs, bool):
            return f"{path}: expected a number {exp!r}, got {obs!r}"
        if meta.only:
            return None
        atol, rtol = tol("float64")
        if exp == obs or _both_nan(exp, obs):
            return None  # equal_nan, as for tensors; Inf equals only itself
        finite = cmath.isfinite(exp) and cmath.isfinite(obs)
        if finite and abs(exp - obs) <= atol + rtol * abs(exp):
            return None
        return f"{path}: expected {exp!r}, got {obs!r}"
    if exp is True and isinstance(obs, str):  # a property's sentence saying why not
        return f"{path}: expected bool True, got str {_short(obs)!r}"
    if type(exp) is not type(obs) and not (_is_int(exp) and _is_int(obs)):
        return f"{path}: expected {type(exp).__name__} {exp!r:.60}, got {type(obs).__name__} {obs!r:.60}"
    if meta.only and _is_int(exp) and not isinstance(exp, bool):
        return None
    if exp != obs:
        return f"{path}: expected {exp!r:.60}, got {obs!r:.60}"
    return None


def _cmp_error(exp: RaisedError, obs: Any, path: str) -> str | None:
    if not isinstance(obs, RaisedError):
        want = f"{exp.type_name}" + (
            f" matching {exp.pattern!r}" if exp.pattern else ""
        )
        return f"{path}: expected {want}, but no exception was raised"
    if exp.type_name not in obs.mro and obs.type_name != exp.type_name:
        return (
            f"{path}: expected {exp.type_name}, got {obs.type_name}: "
            f"{_short(obs.message)}"
        )
    if exp.pattern and not re.search(exp.pattern, obs.message):
        return (
            f"{path}: {obs.type_name} message {_short(obs.message)!r} does not match "
            f"{exp.pattern!r}"
        )
    return None


def _cmp_tensor(
    exp: torch.Tensor, obs: torch.Tensor, path: str, meta: _Meta, tol: Tolerance
) -> str | None:
    if exp.layout != obs.layout:
        return f"{path}: layout {obs.layout}, expected {exp.layout}"
    if exp.dtype != obs.dtype:
        return f"{path}: dtype {_dt(obs.dtype)}, expected {_dt(exp.dtype)}"
    if exp.shape != obs.shape:
        return f"{path}: shape {list(obs.shape)}, expected {list(exp.shape)}"
    if exp.layout != torch.strided:
        exp, obs = exp.to_dense(), obs.to_dense()
    if meta.only:
        if meta.strides and exp.numel() > 1 and exp.stride() != obs.stride():
            return f"{path}: strides {obs.stride()}, expected {exp.stride()}"
        return None
    if obs.device.type == "meta":
        return f"{path}: result is on the meta device; values cannot be compared"
    exp = exp.detach().resolve_conj().resolve_neg()
    obs = obs.detach().resolve_conj().resolve_neg()
    atol, rtol = tol(_dt(exp.dtype))
    if exp.dtype in _WIDENED:
        # assert_close compares float8 bit for bit only (it refuses a tolerance);
        # every float8 value is exact in float32, so compare there, with float8's
        exp, obs = exp.float(), obs.float()
    try:
        assert_close(obs, exp, atol=atol, rtol=rtol)
    except AssertionError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        nonfinite = _nonfinite_difference(exp, obs)
        return f"{path}: " + "; ".join(([nonfinite] if nonfinite else []) + lines[:4])
    return None


def _nonfinite_difference(exp: torch.Tensor, obs: torch.Tensor) -> str | None:
    """Where NaN and Inf of `obs` are not where `exp` has them, in words.

    assert_close reports the greatest difference, which for a NaN turned into 0 reads
    "nan at index (0,)"; this names the expected and the observed value instead.
    """
    if not (exp.is_floating_point() or exp.is_complex()):
        return None
    differ = _nonfinite_class(exp) != _nonfinite_class(obs)
    if not bool(differ.any()):
        return None
    index = tuple(differ.nonzero()[0].tolist())
    return (
        f"NaN/Inf not where CPU has them at {int(differ.sum())} element(s), first at "
        f"index {index}: expected {exp[index].item()}, got {obs[index].item()}"
    )


def _nonfinite_class(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +Inf, 3 -Inf (complex: 2 for any infinite part)."""
    if t.is_complex():
        return torch.where(t.isnan(), 1, torch.where(t.isinf(), 2, 0))
    return torch.where(
        t.isnan(), 1, torch.where(t.isposinf(), 2, torch.where(t.isneginf(), 3, 0))
    )


def assert_close(actual: Any, expected: Any, *, atol: float, rtol: float) -> None:
    """``torch.testing.assert_close(..., equal_nan=True, check_stride=False)``.

    assert_close's first call imports torch.distributed.tensor (about a CPU-second,
    with sympy and torch._dynamo behind it), only to unwrap DTensors. A tensor whose
    type is exactly ``torch.Tensor`` is not one, so for those the check goes straight
    to the function assert_close hands its arguments to, with the same pair types:
    the same verdicts and messages (a test compares the two) without the import.
    """
    if _NOT_CLOSE is not None and type(actual) is type(expected) is torch.Tensor:
        if _plainly_close(actual, expected, atol=atol, rtol=rtol):
            return
        metas = _NOT_CLOSE(
            actual,
            expected,
            pair_types=_PAIR_TYPES,
            rtol=rtol,
            atol=atol,
            equal_nan=True,
            check_stride=False,
        )
        if metas:
            raise metas[0].to_error()
        return
    torch.testing.assert_close(
        actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_stride=False
    )


def _plainly_close(
    actual: torch.Tensor, expected: torch.Tensor, *, atol: float, rtol: float
) -> bool:
    """True when the pair passes the one value check assert_close would end in.

    For two strided, unquantized tensors of one dtype, shape and device, assert_close
    checks those attributes (equal here) and then runs exactly this ``isclose`` (the
    stride is not checked). Most cases pass, and assert_close's pair machinery around
    the check cost about three times the check itself (0.17 ms of a case's judgement);
    anything else, and every pair that is not close, goes the whole way (its message).
    """
    if (
        actual.layout is not torch.strided
        or expected.layout is not torch.strided
        or actual.dtype != expected.dtype
        or actual.shape != expected.shape
        or actual.device != expected.device
        or actual.device.type in _VALUES_MOVED_FROM
        or actual.is_quantized
        or expected.is_quantized
        or (actual.dtype.is_floating_point and actual.dtype.itemsize == 1)
    ):
        return False  # assert_close moves, promotes, densifies or compares bitwise
    try:
        matches = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        return bool(matches.all())
    except Exception:
        return False  # the whole way raises what assert_close raises


# assert_close compares these devices' tensors on the CPU (or not at all: meta).
_VALUES_MOVED_FROM = frozenset({"meta", "mps"})


def _direct_check() -> tuple[Any, tuple[Any, ...]]:
    """assert_close's inner function and pair types, when this torch has them."""
    from torch.testing import _comparison

    names = ("NonePair", "BooleanPair", "NumberPair", "TensorLikePair")
    pairs = tuple(getattr(_comparison, name, None) for name in names)
    inner = getattr(_comparison, "not_close_error_metas", None)
    if inner is None or None in pairs:
        return None, ()
    return inner, pairs


_NOT_CLOSE, _PAIR_TYPES = _direct_check()


_WIDENED = frozenset(
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, name)
)


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _both_nan(a: Any, b: Any) -> bool:
    return (
        isinstance(a, float | complex)
        and isinstance(b, float | complex)
        and cmath.isnan(a)
        and cmath.isnan(b)
    )


def _short(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first[:160]
