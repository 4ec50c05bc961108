"""Which family an aten overload belongs to, read from its schema.

The coverage summary counts by family because the gaps differ by kind: an ``out=``
overload needs an ``out=`` call, an in-place one a mutation, a ``*_backward`` one a
gradient. The first family that applies, in this order:

1. ``foreach/fused``: ``_foreach_*`` and ``_fused_*`` (multi-tensor kernels);
2. ``backward``: the op name holds ``backward``;
3. ``out``: a keyword-only argument the schema writes to (``Tensor(a!) out``);
4. ``in-place``: another argument the schema writes to (``add_``, ``copy_``);
5. ``view``: a result aliasing an input without writing it (``transpose``);
6. ``private``: the op name starts with ``_``;
7. ``functional``: everything else.
"""

from __future__ import annotations

import torch

FAMILIES = (
    "foreach/fused",
    "backward",
    "out",
    "in-place",
    "view",
    "private",
    "functional",
)


def family(name: str) -> str:
    """The family of one registered overload (``aten::add.out`` -> ``out``)."""
    op, _, overload = name.removeprefix("aten::").partition(".")
    if op.startswith(("_foreach_", "_fused_")):
        return "foreach/fused"
    if "backward" in op:
        return "backward"
    try:
        schema = torch._C._get_schema(f"aten::{op}", overload)
    except RuntimeError:
        schema = None
    if schema is not None:
        written = [
            a for a in schema.arguments if a.alias_info and a.alias_info.is_write
        ]
        if any(a.kwarg_only for a in written):
            return "out"
        if written:
            return "in-place"
        if any(r.alias_info for r in schema.returns):
            return "view"
    return "private" if op.startswith("_") else "functional"


__all__ = ["FAMILIES", "family"]
