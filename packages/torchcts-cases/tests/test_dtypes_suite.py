"""The dtypes suite: DTYPES decides which of its cases run, casts are judged bit for
bit, float8 tensors are comparable, its repro scripts stand alone, and the CPU still
lacks the kernels the suite leaves out (every case also passes on CPU in
test_suites.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
from torchcts_cases import Selection, select_cases
from torchcts_cases.compare import compare
from torchcts_cases.suites.base import exact
from torchcts_schema import CAPABILITY_NAMES, Manifest, NotRunReason

MakeManifest = Callable[..., Manifest]
RunRepros = Callable[[Manifest, Sequence[str]], list[str]]  # conftest.run_repros
U16, U64 = torch.uint16, torch.uint64
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def _t(values: list[Any], dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(values).to(dtype)


# (dtype, op) pairs the suite leaves out because the CPU of torch 2.13 has no kernel
# (the table in dtypes_ops.py): a torch that adds one fails here, and the suite can
# then judge the op
MISSING_ON_CPU = {
    "complex64-lt": lambda: _t([1j], torch.complex64) < _t([1j], torch.complex64),
    "complex128-max": lambda: _t([1j, 2], torch.complex128).max(),
    "complex64-sort": lambda: _t([1j, 2], torch.complex64).sort(),
    "complex64-clamp": lambda: _t([1j], torch.complex64).clamp(0, 1),
    "complex64-remainder": lambda: _t([1j], torch.complex64) % 2,
    "uint16-add": lambda: _t([1], U16) + _t([2], U16),
    "uint32-sub": lambda: _t([3], torch.uint32) - _t([2], torch.uint32),
    "uint64-neg": lambda: -_t([1], U64),
    "uint16-lt": lambda: _t([1], U16) < _t([2], U16),
    "uint64-max": lambda: _t([1, 2], U64).max(),
    "uint16-bitwise_not": lambda: ~_t([1], U16),
    "uint32-lshift": lambda: _t([1], torch.uint32) << _t([1], torch.uint32),
    "uint16-index_select": lambda: _t([1, 2], U16).index_select(0, torch.tensor([0])),
    "uint64-masked_fill": lambda: _t([1], U64).masked_fill(torch.tensor([True]), 0),
    "uint64-isin": lambda: torch.isin(_t([1], U64), _t([1], U64)),
    "e4m3fn-add": lambda: _t([1.0], E4M3) + _t([1.0], E4M3),
    "e5m2-div": lambda: _t([1.0], E5M2) / _t([2.0], E5M2),
    "e4m3fn-neg": lambda: -_t([1.0], E4M3),
    "e5m2-lt": lambda: _t([1.0], E5M2) < _t([2.0], E5M2),
    "e4m3fn-sum": lambda: _t([1.0], E4M3).sum(),
    "e5m2-max": lambda: _t([1.0], E5M2).max(),
    "e4m3fn-isinf": lambda: _t([1.0], E4M3).isinf(),
    "e4m3fn-isfinite": lambda: _t([1.0], E4M3).isfinite(),
}


@pytest.mark.parametrize("name", sorted(MISSING_ON_CPU))
def test_the_cpu_lacks_the_kernels_the_suite_leaves_out(name: str) -> None:
    """Each op the suite does not judge in a dtype still raises on the CPU."""
    with pytest.raises((NotImplementedError, RuntimeError)):
        MISSING_ON_CPU[name]()


def test_declared_dtypes_decide_which_cases_run(make_manifest: MakeManifest) -> None:
    """True runs a dtype's cases, False makes them not_run (dtype_not_supported), a
    regex claims cases by name, an undeclared dtype is not enumerated; bits and
    quantized cases follow their capabilities, not DTYPES."""
    caps = [c for c in CAPABILITY_NAMES if c != "quantized"]
    m = make_manifest(
        CAPABILITIES=caps,
        DTYPES={
            "float32": True,
            "complex64": True,
            "complex128": False,
            "uint16": "unsigned_casts",
        },
    )
    selected = select_cases(m, Selection(level=8, suites=("dtypes",)))
    runnable = {s.case_id for s in selected.runnable}
    reasons = {r.case_id: (r.not_run_reason, r.detail) for r in selected.not_run}
    assert "dtypes/complex_casts/check/complex64/-" in runnable
    assert reasons["dtypes/complex_casts/check/complex128/-"] == (
        NotRunReason.DTYPE_NOT_SUPPORTED,
        "DTYPES['complex128'] is False",
    )
    assert "dtypes/unsigned_casts/check/uint16/-" in runnable
    assert reasons["dtypes/unsigned_compare/check/uint16/-"] == (
        NotRunReason.DTYPE_NOT_SUPPORTED,
        "op not matched by DTYPES['uint16']",
    )
    listed = runnable | set(reasons)
    assert not any("/uint32/" in cid or "/float8_e5m2/" in cid for cid in listed)
    assert "dtypes/bits_containers/check/-/-" in runnable
    assert reasons["dtypes/quantize_per_tensor/check/-/-"] == (
        NotRunReason.CAPABILITY_NOT_DECLARED,
        "capability quantized not in CAPABILITIES",
    )


def test_exact_tells_signed_zeros_and_float8_steps_apart() -> None:
    """exact(): -0.0 against 0.0 fails at the bits, one float8 step fails at the
    values with the difference; NaNs of another sign or payload compare equal."""
    zero = compare(exact(torch.tensor([0.0])), exact(torch.tensor([-0.0])), path="z")
    assert zero is not None and zero.startswith("z.bits: Tensor-likes are not equal")
    step = compare(exact(_t([1.0], E4M3)), exact(_t([1.125], E4M3)), path="s")
    assert step is not None and step.startswith("s.values: Tensor-likes are not close")
    assert "Greatest absolute difference: 0.125" in step
    nans = torch.tensor([0x7FC00000, -0x400001], dtype=torch.int32).view(torch.float32)
    assert nans.isnan().all()
    assert compare(exact(nans[:1]), exact(nans[1:])) is None
    assert compare(exact(_t([3], U64)), exact(_t([3], torch.int64))) is not None


def test_float8_tensors_compare_under_the_float8_tolerance() -> None:
    """assert_close refuses a tolerance for float8; TorchCTS compares float8 values
    in float32 under float8's tolerance (e4m3fn 0.125): one step at 2.0 passes, 3.0
    against 2.0 fails naming the difference."""
    two = _t([1.0, 2.0], E4M3)
    assert compare(two, _t([1.0, 2.25], E4M3)) is None
    far = compare(two, _t([1.0, 3.0], E4M3)) or ""
    assert "Greatest absolute difference: 1.0 at index (1,) (up to 0.125" in far


REPRO_CASES = (
    "dtypes/float8_casts/check/float8_e4m3fn/-",
    "dtypes/complex_conj/check/complex64/-",
    "dtypes/bits_containers/check/-/-",
)


def test_repro_scripts_run_standalone(
    make_manifest: MakeManifest, run_repros: RunRepros
) -> None:
    """dtypes repros carry exact()'s source: with torch alone each reruns its case
    on CPU and finds nothing to reproduce."""
    run_repros(make_manifest(CAPABILITIES=list(CAPABILITY_NAMES)), REPRO_CASES)
