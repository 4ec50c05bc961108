"""Views and aliasing: a view shares storage with its base, and writes go through.

Backends that copy instead of aliasing pass value tests and still break every program
that writes through a view; these checks see that directly.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case, storage_id

SUITE = "views"


@case(SUITE, "view_shares_storage", 1, surfaces=("aten::view",))
def view_shares_storage(device: str, dtype: str | None) -> dict[str, Any]:
    """view(), a slice and t() alias their base and report the right strides."""
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    flat = base.view(12)
    row = base[1]
    tr = base.t()
    return {
        "view_same_storage": storage_id(flat) == storage_id(base),
        "slice_same_storage": storage_id(row) == storage_id(base),
        "t_same_storage": storage_id(tr) == storage_id(base),
        "is_view": [flat._is_view(), row._is_view(), tr._is_view()],
        "row_offset": row.storage_offset(),
        "t_stride": list(tr.stride()),
        "values": tr.contiguous(),
    }


@case(SUITE, "write_through_view", 1, surfaces=("aten::copy_", "aten::fill_"))
def write_through_view(device: str, dtype: str | None) -> dict[str, Any]:
    """A write into a view (fill_, copy_, index assign) is visible in the base."""
    base = torch.zeros(4, 5, device=device)
    base[1].fill_(7.0)
    base[:, 2].copy_(torch.arange(4, dtype=torch.float32).to(device))
    base.view(20)[19] = -1.0
    return {"base": base}


@case(SUITE, "view_chain_offsets", 2, surfaces=("aten::narrow", "aten::select"))
def view_chain_offsets(device: str, dtype: str | None) -> dict[str, Any]:
    """Chained views (narrow, select, unsqueeze, expand) keep offsets and strides."""
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5).to(device)
    v = base.narrow(2, 1, 3).select(0, 2).unsqueeze(0).expand(2, 4, 3)
    v2 = base.transpose(0, 2)[1:, ::2]
    return {
        "offset": v.storage_offset(),
        "stride": list(v.stride()),
        "values": v.contiguous(),
        "v2_offset": v2.storage_offset(),
        "v2_stride": list(v2.stride()),
        "v2_values": v2.contiguous(),
        "same_storage": storage_id(v) == storage_id(base) == storage_id(v2),
    }


@case(SUITE, "as_strided_alias", 3, surfaces=("aten::as_strided",))
def as_strided_alias(device: str, dtype: str | None) -> dict[str, Any]:
    """as_strided reads overlapping windows of the same storage and writes go back."""
    base = torch.arange(10, dtype=torch.float32).to(device)
    windows = base.as_strided((4, 3), (2, 1), 1)
    base[3] = 100.0
    return {
        "windows": windows.contiguous(),
        "same": storage_id(windows) == storage_id(base),
    }


@case(SUITE, "reshape_view_or_copy", 2, surfaces=("aten::reshape",))
def reshape_view_or_copy(device: str, dtype: str | None) -> dict[str, Any]:
    """reshape aliases a contiguous input and copies a non-viewable one."""
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6).to(device)
    aliased = base.reshape(6, 4)
    copied = base.t().reshape(24)
    return {
        "aliased_same": storage_id(aliased) == storage_id(base),
        "copied_same": storage_id(copied) == storage_id(base),
        "copied": copied,
    }


@case(SUITE, "unbind_split_views", 2, surfaces=("aten::unbind", "aten::split"))
def unbind_split_views(device: str, dtype: str | None) -> dict[str, Any]:
    """unbind, split and chunk return views; a write into a piece reaches the base."""
    base = torch.zeros(4, 6, device=device)
    pieces = torch.split(base, 2, dim=1)
    pieces[1].fill_(1.0)
    rows = base.unbind(0)
    rows[3].add_(2.0)
    chunks = base.chunk(3, dim=1)
    return {
        "base": base,
        "all_alias": all(
            storage_id(p) == storage_id(base) for p in (*pieces, *rows, *chunks)
        ),
    }


CASES = (
    view_shares_storage,
    write_through_view,
    view_chain_offsets,
    as_strided_alias,
    reshape_view_or_copy,
    unbind_split_views,
)
