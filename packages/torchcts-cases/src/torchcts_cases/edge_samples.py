"""Edge samples: the OpInfo samples that exercise the shapes kernels get wrong first.

A backend's first bugs sit at the edges of an op's shape contract: an empty tensor (a
kernel that launches with no elements or divides by numel), a 0-dim tensor (stride and
size arrays of length zero), a Python number where a tensor may stand (a wrapped
number, promoted below every tensor), and operands of different shapes that broadcast
(strides of zero). The default run (level 1) runs these samples of the primitive ops in
every variant and dtype, beside sample 0, so it meets those bugs without running every
sample. The index keeps, per op and dtype, the first sample of each kind found, so
listing never builds a sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch

EDGE_KINDS = ("empty", "zero_dim", "scalar", "broadcast")


def _flat(values: Iterable[Any]) -> Iterator[Any]:
    for value in values:
        if isinstance(value, list | tuple):
            yield from _flat(value)
        else:
            yield value


def edge_kinds(sample: Any) -> frozenset[str]:
    """The edge kinds of one OpInfo SampleInput (module docstring).

    "scalar" is a float or complex Python number among the arguments, or as the input
    itself: integers are left out because they are mostly dims and sizes, and bools
    are flags.
    """
    operands = list(_flat([sample.input, *sample.args, *sample.kwargs.values()]))
    tensors = [t for t in operands if isinstance(t, torch.Tensor)]
    kinds: set[str] = set()
    if any(t.numel() == 0 for t in tensors):
        kinds.add("empty")
    if isinstance(sample.input, torch.Tensor) and sample.input.dim() == 0:
        kinds.add("zero_dim")
    if any(type(v) in (float, complex) for v in operands):
        kinds.add("scalar")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        try:
            joint = tuple(torch.broadcast_shapes(*shapes))  # type: ignore[no-untyped-call]
        except RuntimeError:
            joint = None
        if joint is not None and any(shape != joint for shape in shapes):
            kinds.add("broadcast")
    return frozenset(kinds)


class EdgeFinder:
    """Collects the first sample index of each edge kind over one pass of samples."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}

    def see(self, index: int, sample: Any) -> None:
        """Note `sample` (number `index` of its pass) if it is a new kind's first."""
        if len(self.first) == len(EDGE_KINDS):
            return
        try:
            kinds = edge_kinds(sample)
        except Exception:  # an exotic sample: it simply is not an edge sample
            return
        for kind in kinds:
            self.first.setdefault(kind, index)

    def samples(self) -> list[int]:
        """The edge samples found, ascending, without sample 0 (always level 1)."""
        return sorted({n for n in self.first.values() if n != 0})


__all__ = ["EDGE_KINDS", "EdgeFinder", "edge_kinds"]
