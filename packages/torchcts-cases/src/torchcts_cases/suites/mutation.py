"""In-place mutation semantics: in-place ops return self, bump the version counter and
mutate only what they should.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case, storage_id

SUITE = "mutation"
DTYPES = ("float32", "int64")


@case(SUITE, "inplace_returns_self", 1, dtypes=DTYPES, surfaces=("aten::add_",))
def inplace_returns_self(device: str, dtype: str | None) -> dict[str, Any]:
    """x.add_(1) returns x itself, keeps its storage and bumps its version."""
    x = torch.arange(6, dtype=getattr(torch, dtype or "float32")).to(device)
    before = x._version
    sid = storage_id(x)
    y = x.add_(1)
    y2 = x.mul_(3)
    return {
        "returns_self": y is x and y2 is x,
        "same_storage": storage_id(x) == sid,
        "version_bumped": x._version > before,
        "values": x,
    }


@case(SUITE, "inplace_on_view", 1, surfaces=("aten::mul_",))
def inplace_on_view(device: str, dtype: str | None) -> dict[str, Any]:
    """An in-place op on a strided view changes only the viewed elements."""
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    x[:, 1::2].mul_(-1)
    x.t()[0].add_(100)
    return {"x": x}


@case(
    SUITE,
    "masked_index_inplace",
    2,
    surfaces=("aten::masked_fill_", "aten::index_put_"),
)
def masked_index_inplace(device: str, dtype: str | None) -> dict[str, Any]:
    """masked_fill_, index_put_ (with accumulate) and index_add_ mutate in place."""
    x = torch.zeros(5, device=device)
    mask = torch.tensor([True, False, True, False, False]).to(device)
    x.masked_fill_(mask, 2.0)
    idx = torch.tensor([1, 1, 4]).to(device)
    x.index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]).to(device), accumulate=True)
    y = torch.zeros(3, 2, device=device)
    y.index_add_(0, torch.tensor([0, 2, 0]).to(device), torch.ones(3, 2).to(device))
    return {"x": x, "y": y}


@case(SUITE, "copy_broadcast_and_cast", 2, surfaces=("aten::copy_",))
def copy_broadcast_and_cast(device: str, dtype: str | None) -> dict[str, Any]:
    """copy_ broadcasts its source and casts dtype into the destination."""
    dst = torch.zeros(3, 4, dtype=torch.int32, device=device)
    r = dst.copy_(torch.tensor([1.7, -2.2, 3.5, 4.9]).to(device))
    return {"dst": dst, "returns_self": r is dst, "dtype": str(dst.dtype)}


@case(SUITE, "inplace_dtype_error", 2)
def inplace_dtype_error(device: str, dtype: str | None) -> dict[str, Any]:
    """An in-place op whose result type cannot be cast to self raises, leaving self."""
    x = torch.arange(4).to(device)
    try:
        x.add_(0.5)
        raised = None
    except RuntimeError as exc:
        raised = type(exc).__name__
    return {"raised": raised, "x": x}


@case(SUITE, "overlapping_inplace_error", 3)
def overlapping_inplace_error(device: str, dtype: str | None) -> dict[str, Any]:
    """Writing in place into an expanded (internally overlapping) tensor raises."""
    x = torch.zeros(1, device=device).expand(4)
    try:
        x.add_(torch.ones(4).to(device))
        raised = None
    except RuntimeError as exc:
        raised = type(exc).__name__
    return {"raised": raised}


CASES = (
    inplace_returns_self,
    inplace_on_view,
    masked_index_inplace,
    copy_broadcast_and_cast,
    inplace_dtype_error,
    overlapping_inplace_error,
)
