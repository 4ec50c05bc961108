"""Overloads that re-point or resize a tensor's storage, called explicitly: the
in-place ``set_`` forms (the tensor takes another tensor's or a storage's data:
shared storage, writes seen both ways), the functional ``set`` and ``resize`` forms
and their out= forms (what functionalization and compiled graphs call), judged
against the same calls on CPU. Resizes only shrink, so every element is defined.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case, holds, storage_id

SUITE = "mutation"
A = torch.ops.aten


def _source(device: str, dtype: str | None) -> torch.Tensor:
    """0..11 as a (3, 4) tensor on the device."""
    kind = getattr(torch, dtype or "float32")
    return torch.arange(12, dtype=kind, device=device).reshape(3, 4)


@case(
    SUITE,
    "set_inplace",
    3,
    dtypes=("float32", "int64"),
    surfaces=("aten::set_", "aten::set_.source_Tensor", "aten::set_.source_Storage"),
)
def set_inplace(device: str, dtype: str | None) -> dict[str, Any]:
    """set_(source) makes self a view of source's storage with its sizes (a write
    through one is seen by the other) and returns self; set_(storage) views the
    whole storage; set_() leaves self empty."""
    source = _source(device, dtype)
    target = torch.empty(0, dtype=source.dtype, device=device)
    returned = A.set_.source_Tensor(target, source)
    target[0, 0] = 100
    out: dict[str, Any] = {
        "source_Tensor returns self": returned is target,
        "source_Tensor shares storage": holds(
            storage_id(target) == storage_id(source),
            "self does not share the source's storage",
        ),
        "source_Tensor values": target.clone(),
        "source_Tensor write seen by source": source.clone(),
    }
    whole = torch.empty(0, dtype=source.dtype, device=device)
    returned = A.set_.source_Storage(whole, source.untyped_storage())
    out["source_Storage returns self"] = returned is whole
    out["source_Storage shares storage"] = holds(
        storage_id(whole) == storage_id(source),
        "self does not view the storage it was given",
    )
    out["source_Storage values"] = whole.clone()
    emptied = _source(device, dtype)
    returned = A.set_(emptied)
    out["set_ returns self"] = returned is emptied
    out["set_ empties self"] = emptied.clone()
    return out


@case(
    SUITE,
    "set_functional",
    3,
    dtypes=("float32", "int64"),
    surfaces=(
        "aten::set.source_Storage",
        "aten::set.source_Storage_out",
        "aten::set.source_Storage_storage_offset",
        "aten::set.source_Storage_storage_offset_out",
    ),
)
def set_functional(device: str, dtype: str | None) -> dict[str, Any]:
    """The functional set forms return the storage's data as a tensor (whole, or
    from an offset with sizes and strides) and leave self alone; their out= forms
    write it into the out and return it."""
    source = _source(device, dtype)
    storage = source.untyped_storage()
    kind = source.dtype

    def blank() -> torch.Tensor:
        return torch.zeros(2, dtype=kind, device=device)

    self_ = blank()
    out: dict[str, Any] = {
        "source_Storage": A.set.source_Storage(self_, storage),
        "source_Storage_storage_offset": A.set.source_Storage_storage_offset(
            self_, storage, 2, [2, 3], [4, 1]
        ),
        "self unchanged": self_,
    }
    given = torch.empty(0, dtype=kind, device=device)
    returned = A.set.source_Storage_out(blank(), storage, out=given)
    out["source_Storage_out"] = given
    out["source_Storage_out returns out"] = returned is given
    given = torch.empty(0, dtype=kind, device=device)
    returned = A.set.source_Storage_storage_offset_out(
        blank(), storage, 2, [2, 3], [4, 1], out=given
    )
    out["source_Storage_storage_offset_out"] = given
    out["source_Storage_storage_offset_out returns out"] = returned is given
    return out


@case(
    SUITE,
    "resize_functional",
    3,
    dtypes=("float32", "int64"),
    surfaces=(
        "aten::resize",
        "aten::resize.out",
        "aten::resize_as",
        "aten::resize_as.out",
    ),
)
def resize_functional(device: str, dtype: str | None) -> dict[str, Any]:
    """resize and resize_as, functional and out=, to a smaller size: the result
    holds the input's leading elements in the new shape (all defined), the input
    stays as it was, an out= form returns its out."""
    source = _source(device, dtype)
    template = torch.zeros(2, 2, dtype=source.dtype, device=device)
    out: dict[str, Any] = {
        "resize": A.resize(source, [2, 3]),
        "resize_as": A.resize_as(source, template),
    }
    given = torch.empty(0, dtype=source.dtype, device=device)
    out["resize.out returns out"] = A.resize.out(source, [5], out=given) is given
    out["resize.out"] = given
    given = torch.empty(0, dtype=source.dtype, device=device)
    out["resize_as.out returns out"] = (
        A.resize_as.out(source, template, out=given) is given
    )
    out["resize_as.out"] = given
    out["input unchanged"] = source
    return out


CASES = (set_inplace, set_functional, resize_functional)
