"""NaN, +Inf and -Inf written into an OpInfo sample: the inputs of the nonfinite variant.

OpInfo's samples are finite, so a backend that drops NaN (a max that ignores it, a
kernel that flushes Inf to the largest finite value, a sort that puts NaN first)
passes every other variant. The nonfinite variant runs the forward call on the same
sample with non-finite values placed into it, and CPU on those very inputs is the
expected result (compared with ``equal_nan``: NaN where CPU has NaN, Inf of the same
sign where CPU has Inf, the dtype's tolerance elsewhere).

The placement, which a reader can redo by hand:

- Targets are the dense (strided, unquantized) floating and complex tensors of
  ``(input, args, kwargs)`` with at least one element, in that order (list and tuple
  items in order, kwargs in their order); a tensor that appears twice is one target.
  Integer and bool tensors, and every non-tensor value, stay as OpInfo built them.
- Each target gets the values at its first, middle (``numel // 2``) and last element
  in row-major order: three values when it has three elements or more, two (first,
  last) for two, one for one. A complex element gets the value as its real part,
  imaginary part 0; a dtype without infinities stores what PyTorch's conversion makes
  of them (``float8_e4m3fn`` saturates to 448).
- Which value goes where rotates: target ``k`` of case ``c`` writes
  ``VALUES[(r + p) % 3]`` at position ``p`` (0 first, 1 middle, 2 last) with
  ``r = (case_seed(c) + k) % 3``, so two same-shaped operands meet NaN against Inf and
  +Inf against -Inf at the same position, and different cases see different orders.
- A sample whose op relies on an invariant between its elements keeps it (`TWINS`):
  ``max_unpool``'s values come from ``max_pool``, so two positions of one plane with
  the same index hold the same value, and the op writes both to one output element
  in an order PyTorch leaves unspecified ("may behave nondeterministically when the
  input indices has repeat values"). A value placed at one of them is placed at every
  other position of its plane with that index too (listed as placements of their
  own), so the output stays defined; CPU runs of the unpaired sample disagreed.

Everything depends on the case id and the sample alone, so CPU, the device, a rerun
from a saved capsule and a standalone repro script all get the same inputs. The values
are written into a copy on CPU, which is then copied to the device: the device's own
indexing is not part of building its inputs.

Where PyTorch leaves the result on NaN or Inf undefined (casts to integer types, a
search in boundaries a NaN unsorts, linear-algebra solvers: `nonfinite_not_valid`),
CPU's result cannot be the expected one, and the cases are not_run
(comparison_not_valid) with the reason. Where CPU raises on the values (histc on an
infinite range, multinomial on NaN probabilities), that exception is the expected
behaviour, as in every variant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torchcts_cases.spec import case_seed
from torchcts_cases.transfer import to_device

VALUES = ("nan", "inf", "-inf")
_PARTS = ("input", "args", "kwargs")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Placement:
    """One non-finite value written into one element of one input tensor."""

    path: Path  # ("args", 0) is sample.args[0]; ("kwargs", "weight") a keyword
    index: tuple[int, ...]  # the element, one coordinate per dimension
    value: str  # one of VALUES

    def describe(self) -> str:
        """``args[0][1, 2] = -inf``: where it went, as Python subscripts."""
        where = ", ".join(map(str, self.index)) if self.index else "()"
        return f"{expression(self.path)}[{where}] = {self.value}"


@dataclass(frozen=True)
class NonfiniteSample:
    """An OpInfo sample with non-finite values placed in it (a CPU copy)."""

    input: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    placements: tuple[Placement, ...]


def is_target(value: object) -> bool:
    """Whether the placement writes into `value` (a non-empty dense float tensor)."""
    return (
        isinstance(value, torch.Tensor)
        and (value.is_floating_point() or value.is_complex())
        and value.layout == torch.strided
        and not value.is_quantized
        and value.numel() > 0
    )


def targets(input: Any, args: Any, kwargs: Any) -> list[tuple[Path, torch.Tensor]]:
    """The target tensors of a sample with their paths, in placement order."""
    seen: set[int] = set()
    found: list[tuple[Path, torch.Tensor]] = []
    for path, value in _walk((input, tuple(args), dict(kwargs)), ()):
        if is_target(value) and id(value) not in seen:
            seen.add(id(value))
            found.append((path, value))
    return found


def has_targets(sample: Any) -> bool:
    """Whether an OpInfo sample gets any non-finite value (the index counts these)."""
    return bool(targets(sample.input, sample.args, sample.kwargs))


def placements(sample: Any, case_id: str, op: str = "") -> tuple[Placement, ...]:
    """Where the values go for case `case_id` built from `sample` of OpInfo `op`
    (module docstring)."""
    seed = case_seed(case_id)
    twins = TWINS.get(op)
    out: list[Placement] = []
    for k, (path, tensor) in enumerate(
        targets(sample.input, sample.args, sample.kwargs)
    ):
        rotation = (seed + k) % len(VALUES)
        for p, flat in enumerate(_positions(tensor.numel())):
            value = VALUES[(rotation + p) % len(VALUES)]
            placed = Placement(path, _unravel(flat, tuple(tensor.shape)), value)
            out.append(placed)
            if twins is not None:
                out += (Placement(path, i, value) for i in twins(sample, placed))
    return tuple(out)


def _unpool_twins(spatial: int) -> Any:
    """The other positions of a max_unpool values element's plane with its index."""

    def twins(sample: Any, placed: Placement) -> list[tuple[int, ...]]:
        values, indices = sample.input, (sample.args or (None,))[0]
        if (
            placed.path != ("input",)
            or not isinstance(indices, torch.Tensor)
            or not isinstance(values, torch.Tensor)
            or indices.shape != values.shape
        ):
            return []
        lead, at = placed.index[:-spatial], placed.index[-spatial:]
        plane = indices[lead]
        same = (plane == plane[at]).nonzero().tolist()
        return [(*lead, *where) for where in same if tuple(where) != at]

    return twins


TWINS = {f"nn.functional.max_unpool{n}d": _unpool_twins(n) for n in (1, 2, 3)}


def with_nonfinite(sample: Any, case_id: str, op: str = "") -> NonfiniteSample:
    """A CPU copy of `sample` with the case's non-finite values written into it.

    The copy keeps the sample's aliasing (`to_device`), so a value written into a
    view lands in its base as it would in OpInfo's own tensors; the sample itself is
    never changed (the generator pass it came from may be shared with other cases).
    """
    where = placements(sample, case_id, op)
    inp, args, kwargs = to_device((sample.input, sample.args, sample.kwargs), "cpu")
    parts = {"input": inp, "args": args, "kwargs": kwargs}
    with torch.no_grad():
        for placement in where:
            tensor = _locate(parts, placement.path)
            tensor[placement.index] = float(placement.value)
    return NonfiniteSample(inp, tuple(args), dict(kwargs), where)


def expression(path: Path) -> str:
    """Python source for the value at `path` (``args[0]``, ``kwargs['weight']``)."""
    head, *rest = path
    return str(head) + "".join(f"[{step!r}]" for step in rest)


_INT_CAST = (
    "converts floating values to an integer dtype, which C++ and PyTorch leave "
    "undefined for NaN and Inf (the integer differs between processors)"
)
_UNSORTED = (
    "needs a sorted sequence of boundaries, which a NaN breaks (the result is then "
    "not specified)"
)
# Ops whose result on NaN or Inf inputs PyTorch does not define, so CPU's cannot be
# the expected one; their nonfinite cases are not_run: comparison_not_valid.
NONFINITE_UNDEFINED = {
    "byte": _INT_CAST,
    "char": _INT_CAST,
    "short": _INT_CAST,
    "int": _INT_CAST,
    "long": _INT_CAST,
    "searchsorted": _UNSORTED,
    "bucketize": _UNSORTED,
    "frexp": "returns the exponent of +-Inf and NaN, which C leaves unspecified",
}
# Ops whose floating input tensors become values of the case's dtype (start and end
# of the tensor overloads): undefined for NaN and Inf when that dtype is integer.
_RESULT_IN_CASE_DTYPE = frozenset({"linspace", "logspace"})
# PyTorch's notes on numerical accuracy: the libraries behind torch.linalg (LAPACK,
# MAGMA, cuSOLVER) give no guarantee on inputs with Inf or NaN, "as such, neither does
# PyTorch": a result with non-finite values, an exception or a segfault are all
# allowed, and CPU's linalg.eigvals does segfault on a NaN (pytorch/pytorch#93124).
_SOLVER = (
    "runs a linear-algebra solver, which PyTorch's numerical-accuracy notes leave "
    "undefined on NaN and Inf (it may return them, raise or segfault; CPU's "
    "linalg.eigvals segfaults, pytorch/pytorch#93124)"
)
# linalg ops built from matmul and elementwise kernels, defined on NaN and Inf
_LINALG_WITHOUT_SOLVER = frozenset(
    {
        "linalg.cross",
        "linalg.diagonal",
        "linalg.multi_dot",
        "linalg.vander",
        "linalg.vecdot",
        "linalg.vector_norm",
    }
)
# solver-backed ops outside the linalg namespace
_SOLVER_OPS = frozenset(
    {
        "cholesky",
        "cholesky_inverse",
        "cholesky_solve",
        "geqrf",
        "logdet",
        "lu",
        "lu_solve",
        "ormqr",
        "pca_lowrank",
        "pinverse",
        "qr",
        "svd",
        "svd_lowrank",
        "triangular_solve",
    }
)


def nonfinite_not_valid(op: Any, dtype: torch.dtype) -> str | None:
    """Why CPU's result on NaN and Inf cannot judge `op` in `dtype`, or None.

    Besides `NONFINITE_UNDEFINED`: linear-algebra solvers (every ``linalg.*`` op but
    the matmul and elementwise ones, and their older names), and a unary ufunc that
    declares
    ``handles_complex_extremal_values=False`` is known not to handle complex NaN
    and Inf (PyTorch's own extremal-value tests leave it out).
    """
    why = NONFINITE_UNDEFINED.get(op.name)
    if why is None and _solver(op.name):
        why = _SOLVER
    integral = not (dtype.is_floating_point or dtype.is_complex)
    if why is None and op.name in _RESULT_IN_CASE_DTYPE and integral:
        why = _INT_CAST
    extremal = getattr(op, "handles_complex_extremal_values", True)
    if why is None and dtype.is_complex and not extremal:
        why = "OpInfo says it does not handle complex NaN and Inf"
    return None if why is None else f"{op.name} {why}"


def _solver(name: str) -> bool:
    if name.startswith("linalg."):
        return name not in _LINALG_WITHOUT_SOLVER
    return name in _SOLVER_OPS


def _positions(numel: int) -> list[int]:
    return [0, numel // 2, numel - 1] if numel >= 3 else list(range(numel))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index: list[int] = []
    for size in reversed(shape):
        flat, at = divmod(flat, size)
        index.append(at)
    return tuple(reversed(index))


def _walk(obj: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    if not path:  # the (input, args, kwargs) triple itself
        for name, part in zip(_PARTS, obj, strict=True):
            yield from _walk(part, (name,))
        return
    if isinstance(obj, list | tuple) and not hasattr(obj, "_fields"):
        for i, item in enumerate(obj):
            yield from _walk(item, (*path, i))
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from _walk(item, (*path, key))
    else:
        yield path, obj


def _locate(parts: dict[str, Any], path: Path) -> torch.Tensor:
    head, *rest = path
    value = parts[str(head)]
    for step in rest:
        value = value[step]
    assert isinstance(value, torch.Tensor)
    return value
