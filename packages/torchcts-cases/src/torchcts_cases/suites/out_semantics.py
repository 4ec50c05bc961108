"""``out=`` semantics: resizing, dtype rules and returning the out tensor itself.

A resized out tensor's strides are contract: ``resize_`` gives contiguous strides
(its documented default memory format), and these inputs are contiguous, so the
structured kernels' own output layout is contiguous too.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case, storage_id

SUITE = "out_semantics"


def _raised(fn: Any) -> str | None:
    try:
        fn()
    except (RuntimeError, TypeError, ValueError) as exc:
        return type(exc).__name__
    return None


@case(SUITE, "out_returns_out", 1, surfaces=("aten::add.out",))
def out_returns_out(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.add(..., out=o) writes into o, returns o and keeps its storage."""
    a = torch.arange(6, dtype=torch.float32).to(device)
    out = torch.empty(6, device=device)
    sid = storage_id(out)
    r = torch.add(a, 2, out=out)
    return {"returns_out": r is out, "same_storage": storage_id(out) == sid, "out": out}


@case(SUITE, "out_resized_from_empty", 2, surfaces=("aten::mul.out",))
def out_resized_from_empty(device: str, dtype: str | None) -> dict[str, Any]:
    """A zero-element out tensor is resized to the result shape, contiguous."""
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(device)
    out = torch.empty(0, device=device)
    torch.mul(a, a, out=out)
    return {"shape": list(out.shape), "strides": list(out.stride()), "out": out}


@case(SUITE, "out_wrong_shape_resized", 3, surfaces=("aten::sin.out",))
def out_wrong_shape_resized(device: str, dtype: str | None) -> dict[str, Any]:
    """A non-empty out of the wrong shape is resized (PyTorch warns, then resizes),
    contiguous."""
    import warnings

    a = torch.arange(6, dtype=torch.float32).to(device)
    out = torch.empty(2, 2, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.sin(a, out=out)
    return {"shape": list(out.shape), "strides": list(out.stride()), "out": out}


@case(SUITE, "out_dtype_rules", 2, surfaces=("aten::add.out",))
def out_dtype_rules(device: str, dtype: str | None) -> dict[str, Any]:
    """int+int into a float out is allowed; float into an int out raises."""
    ints = torch.arange(4).to(device)
    fout = torch.empty(4, device=device)
    torch.add(ints, ints, out=fout)
    floats = torch.ones(4, device=device)
    iout = torch.empty(4, dtype=torch.int64, device=device)
    return {
        "float_out": fout,
        "int_out_error": _raised(lambda: torch.add(floats, floats, out=iout)),
    }


@case(SUITE, "out_multiple_outputs", 3, surfaces=("aten::max.dim_max",))
def out_multiple_outputs(device: str, dtype: str | None) -> dict[str, Any]:
    """Ops with two outputs (max with dim) fill both out tensors, resized
    contiguous."""
    a = torch.tensor([[1.0, 5.0, 3.0], [7.0, 2.0, 9.0]]).to(device)
    values = torch.empty(0, device=device)
    indices = torch.empty(0, dtype=torch.int64, device=device)
    r = torch.max(a, 1, out=(values, indices))
    return {
        "values": values,
        "indices": indices,
        "returns_out": r[0] is values,
        "strides": [list(values.stride()), list(indices.stride())],
    }


CASES = (
    out_returns_out,
    out_resized_from_empty,
    out_wrong_shape_resized,
    out_dtype_rules,
    out_multiple_outputs,
)
