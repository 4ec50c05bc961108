"""Calls built from an aten overload's schema alone, for overloads no OpInfo sample
reaches (no captured call of them or of a sibling to adapt).

A schema says each argument's type and default, not which values make sense, so a
call is tried in a few fixed plans (`PLANS`: a tensor shape and a dtype shared by
every tensor argument) and the first one whose CPU call completes is kept; the index
records the plan's number, so a case rebuilds the same call from its id. Values are
deterministic: tensors are drawn from a generator seeded by the overload, the plan
and the argument's position.

Arguments with a default are left to it. Without a default:

- ``Tensor``: the plan's shape and dtype, values in [0.5, 1.5) for floating dtypes
  (positive, away from poles: log, sqrt, reciprocal are defined), 1..3 for integer
  dtypes; an index-like name (`INDEX_NAMES`) gets int64 zeros, a valid index of any
  dimension; a mask (`MASK_NAMES`) a bool tensor, every other element set;
- ``Tensor[]``: two such tensors; ``Tensor?[]`` one index tensor;
- ``int``: 1, or 0 for a dimension (`_is_dim`); ``int[N]``: the plan's sizes for a
  size argument (`SIZE_NAMES`), contiguous strides for a stride, ``[0]`` for dims,
  N ones otherwise; ``float`` 0.5, ``Scalar`` 2, ``Scalar[]`` [0.5, 2] (one per
  tensor of a ``Tensor[]``), ``bool`` False, ``ScalarType`` the plan's dtype, an
  optional one None;
- ``str``: only from `STR_HINTS`; any other type (Device, Storage, Stream, script
  classes) has no value here and the overload keeps its reason.

`STR_HINTS` is the reviewed list of argument hints the schema cannot say: each
entry's value is the one PyTorch's Python wrapper passes by default.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts_cases.overload_capture import Call
from torchcts_cases.overload_schema import schema
from torchcts_cases.spec import case_seed

SHAPES: tuple[tuple[int, ...], ...] = ((2, 3), (3,), (2, 3, 4), (1, 2, 4, 4))
# a square matrix (matmul-like kernels) and a volume (3-d pools, convolutions)
MORE_SHAPES: tuple[tuple[int, ...], ...] = ((3, 3), (1, 2, 4, 4, 4))
PLAN_DTYPES = ("float32", "int64")
# plan number -> (shape, dtype): every shape in float32 first, then in int64; the
# later shapes after them (appended, so the numbers stored in an index keep their
# meaning)
PLANS: tuple[tuple[tuple[int, ...], str], ...] = tuple(
    (shape, dtype)
    for shapes in (SHAPES, MORE_SHAPES)
    for dtype in PLAN_DTYPES
    for shape in shapes
)
INDEX_NAMES = frozenset(["index", "indices", "target", "offsets", "lengths"])
MASK_NAMES = frozenset(["mask"])
SIZE_NAMES = frozenset(["size", "sizes", "shape", "output_size", "input_size"])
# argument name -> value, where a str argument has no default (reviewed):
STR_HINTS: dict[str, str] = {
    "reduce": "sum",  # scatter_reduce / index_reduce: torch's docs' first mode
    "approximate": "none",  # gelu's exact form (F.gelu's default)
    "padding_mode": "zeros",  # grid samplers' F.grid_sample default
}


class NoValue(Exception):
    """An argument the schema gives no value for (the message says which)."""


def plan(number: int) -> tuple[tuple[int, ...], str]:
    """The shape and dtype of plan `number` (IndexError beyond `PLANS`)."""
    return PLANS[number]


def schema_call(name: str, number: int) -> Call:
    """The call of overload `name` under plan `number`: positional arguments up to
    the first one left to its default, the rest by name (keyword-only by name).
    NoValue when some argument has no value here."""
    shape, dtype = plan(number)
    builder = _Builder(name, number, shape, getattr(torch, dtype))
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    by_name = False
    for position, argument in enumerate(schema(name).arguments):
        if argument.is_out:
            continue
        if argument.has_default_value():
            by_name = True
            continue
        value = builder.value(position, argument)
        if by_name or argument.kwarg_only:
            kwargs[argument.name] = value
            by_name = True
        else:
            args.append(value)
    return tuple(args), kwargs


class _Builder:
    """The values of one plan, drawn deterministically per argument position."""

    def __init__(
        self, name: str, number: int, shape: tuple[int, ...], dtype: torch.dtype
    ) -> None:
        self.name, self.number, self.shape, self.dtype = name, number, shape, dtype

    def value(self, position: int, argument: Any) -> Any:
        type_text = str(argument.type)
        name = argument.name
        if type_text.startswith("Optional["):
            return None
        if type_text == "Tensor" and name in MASK_NAMES:
            return (torch.arange(math.prod(self.shape)) % 2 == 0).reshape(self.shape)
        if type_text == "Tensor":
            return self.tensor(position, name in INDEX_NAMES)
        if type_text == "List[Tensor]":
            return [self.tensor(position, False), self.tensor(position + 1000, False)]
        if type_text == "List[Optional[Tensor]]":
            return [self.tensor(position, True)]
        if type_text == "int":
            return 0 if _is_dim(name) else 1
        if type_text == "List[int]":
            return self.int_list(name, argument.N)
        if type_text == "float":
            return 0.5
        if type_text == "number":
            return 2
        if type_text == "List[number]":  # one per tensor of a foreach op's lists
            return [0.5, 2]
        if type_text == "bool":
            return False
        if type_text == "List[bool]":
            return [False] * (argument.N or 1)
        if type_text == "ScalarType":
            return self.dtype
        if type_text == "str" and name in STR_HINTS:
            return STR_HINTS[name]
        raise NoValue(f"its argument {name!r} ({type_text}) has no schema-built value")

    def tensor(self, position: int, index_like: bool) -> torch.Tensor:
        if index_like:
            return torch.zeros(self.shape, dtype=torch.int64)
        seed = case_seed(f"aten-schema/{self.name}/{self.number}/{position}")
        generator = torch.Generator().manual_seed(seed)
        if self.dtype.is_floating_point:
            return torch.rand(self.shape, generator=generator, dtype=self.dtype) + 0.5
        return torch.randint(1, 4, self.shape, generator=generator, dtype=self.dtype)

    def int_list(self, name: str, n: int | None) -> list[int]:
        if name in SIZE_NAMES:
            return list(self.shape)[-n:] if n else list(self.shape)
        if name == "stride":
            return list(torch.empty(self.shape).stride())
        if _is_dim(name):
            return [0]
        return [1] * (n or 1)


def _is_dim(name: str) -> bool:
    return name in ("dim", "dims", "dim0", "dim1", "axis", "start_dim", "end_dim")
