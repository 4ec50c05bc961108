"""Numbers that reach a Tensor argument: C++ "wrapped numbers" after the boxed crossing.

C++ code passes a number to a ``Tensor`` argument as a *wrapped number*, a 0-dim
tensor (float64, int64, complex128 or bool) flagged so that type promotion ranks it
below every tensor; ``x.mul(0.5)`` reaches a backend as ``mul.out(x, <wrapped 0.5>)``.
Crossing into a Python kernel turns it into a plain Python number, and the flag cannot
be set from Python. Two ways back, both exact where they apply:

- For the ops PyTorch's Python binding accepts numbers for (``add``, ``sub``, ``mul``,
  ``div`` and their spellings: ``torch._C._should_allow_numbers_as_tensors``), the
  number is passed as is, and the binding wraps it again, flag and all.
- Elsewhere the CPU overload rejects a number, so it becomes a plain 0-dim tensor of
  the number's own dtype (float64, ...) whenever a dimensioned input of the same or a
  higher category decides the result dtype anyway (a 0-dim tensor then ranks no higher
  than a wrapped number, and kernels read its value unrounded, as they read a wrapped
  number's); otherwise, with no such input, a 0-dim tensor of the dtype the wrapped
  number would have promoted to (the first tensor's when the number's category is not
  higher, else the default dtype), which rounds the number to that dtype first: the
  one case where simdev can differ from the CPU, in the last bits.
"""

from __future__ import annotations

from typing import Any

import torch

_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}
NUMBER_TYPES = frozenset(_CATEGORY)
# what C++'s wrapped_scalar_tensor makes of each number type
_NATURAL = {
    bool: torch.bool,
    int: torch.int64,
    float: torch.float64,
    complex: torch.complex128,
}


def numbers_pass_through(name: str) -> bool:
    """Whether PyTorch's binding of overload `name` (``aten::mul.out``) accepts a
    Python number for a Tensor argument, making it a wrapped number again."""
    namespace, _, rest = name.partition("::")
    packet = rest.partition(".")[0]
    return namespace == "aten" and torch._C._should_allow_numbers_as_tensors(packet)


def rewrap_number(
    where: int | str,
    cargs: list[Any],
    ckwargs: dict[str, Any],
    writes: tuple[int | str, ...] = (),
) -> None:
    """Turn the Python number at `where` back into a 0-dim tensor (module docstring);
    `writes` are the written arguments, which take no part in type promotion."""
    if isinstance(where, int):
        if where >= len(cargs) or type(cargs[where]) not in _CATEGORY:
            return
        value = cargs[where]
    else:
        if type(ckwargs.get(where)) not in _CATEGORY:
            return
        value = ckwargs[where]
    inputs = [
        *(v for i, v in enumerate(cargs) if i not in writes),
        *(v for k, v in ckwargs.items() if k not in writes),
    ]
    tensor = torch.tensor(value, dtype=_number_dtype(value, _tensors(inputs)))
    if isinstance(where, int):
        cargs[where] = tensor
    else:
        ckwargs[where] = tensor


def _tensors(values: list[Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def _dtype_category(dtype: torch.dtype) -> int:
    """The `_CATEGORY` of a dtype: bool 0, integer 1, floating 2, complex 3."""
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype == torch.bool else 1


def _number_dtype(value: Any, inputs: list[torch.Tensor]) -> torch.dtype:
    category = _CATEGORY[type(value)]
    if any(t.dim() > 0 and _dtype_category(t.dtype) >= category for t in inputs):
        return _NATURAL[type(value)]
    if inputs:
        reference = inputs[0].dtype
        if category <= _dtype_category(reference):
            return reference
    default = torch.get_default_dtype()
    return (torch.bool, torch.int64, default, default.to_complex())[category]
