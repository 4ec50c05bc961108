"""Reviewed upstream defects: places where PyTorch's CPU disagrees with itself, so the
CPU cannot be the oracle for the values and a reviewed reference takes its place; and
calls that take another path in PyTorch whenever a Python dispatch mode is on, so
TorchCTS's own watch (a dispatch mode, `torchcts_cases.fallback_watch`) would change
the device's result and is taken off for them.

An entry names the ops and variant it covers, the upstream defect (its cause in
PyTorch's source and the issue text to file), and what stays judged. It applies to one
sample only while the installed PyTorch still shows the disagreement on that very
sample: once PyTorch is fixed the values are judged again, with no edit here. An op
absent from this table is judged as always, so a new disagreement fails (in CPU
validation too) until someone reviews it and adds an entry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from torchcts_cases.dispatch_recorder import EagerDispatchMode
from torchcts_cases.transfer import tensors_in


@dataclass(frozen=True)
class UpstreamDefect:
    """One reviewed disagreement of PyTorch's CPU with itself."""

    key: str  # a stable short name, shown in records and reports
    ops: tuple[str, ...]  # OpInfo op names it covers
    variant: str
    cause: str  # where in PyTorch's source it comes from
    judged: str  # what the reviewed reference still judges
    issue: str  # the upstream issue's title (its full text: docs/upstream-defects.md)

    def note(self) -> str:
        """The record's note: why values are not judged, and what is."""
        return (
            f"reviewed reference (upstream PyTorch defect {self.key}: {self.issue}): "
            f"values not judged, {self.judged}"
        )


DEFECTS = (
    UpstreamDefect(
        key="ihfftn-out-one-dim",
        ops=("fft.ihfftn", "fft.ihfft2"),
        variant="out",
        cause=(
            "aten/src/ATen/native/SpectralOps.cpp fft_ihfftn_impl: when one dimension "
            "is transformed it calls at::conj_physical_out(tmp, out), arguments "
            "swapped (the signature is (out, self)): it writes conj(out) into the "
            "temporary and leaves out unwritten. The op is CompositeImplicitAutograd, "
            "so every device inherits it."
        ),
        judged="the out= call's shape, dtype and that it returns out",
        issue=(
            "torch.fft.ihfftn / ihfft2 with out= leave out unwritten when one "
            "dimension is transformed"
        ),
    ),
)

_BY_OP = {(op, d.variant): d for d in DEFECTS for op in d.ops}


def defect_for(op: str, variant: str) -> UpstreamDefect | None:
    """The reviewed defect covering `op` in `variant`, if any."""
    return _BY_OP.get((op, variant))


@dataclass(frozen=True)
class ModeDefect:
    """One reviewed call whose result PyTorch changes while any Python dispatch mode
    is on. Values stay judged against the CPU: only TorchCTS's watch steps aside
    while the device runs the call, so the device computes what it computes in a
    user's program."""

    key: str
    ops: tuple[str, ...]
    variant: str
    cause: str
    issue: str  # the title; the full text is in docs/upstream-defects.md

    def note(self) -> str:
        """The record's note: what ran differently, and what still holds."""
        return (
            f"upstream PyTorch defect {self.key} ({self.issue}): the device call ran "
            "without TorchCTS's dispatch-mode watch; values judged as always, CPU "
            "fallbacks in it seen through their warnings only"
        )


MODE_DEFECTS = (
    ModeDefect(
        key="matrix-rank-out-under-mode",
        ops=("linalg.matrix_rank", "linalg.matrix_rank.hermitian"),
        variant="out",
        cause=(
            "aten/src/ATen/native/LinearAlgebra.cpp matrix_rank_impl: when "
            "isTensorSubclassLike(input) (true whenever a Python dispatch mode is on) "
            "it does `result = at::sum(S > tol, -1)`, which rebinds the C++ handle of "
            "out instead of writing into it; out keeps its old contents. The op is "
            "CompositeImplicitAutograd, so every device inherits it."
        ),
        issue=(
            "torch.linalg.matrix_rank(out=) leaves out unwritten while a dispatch "
            "mode is active"
        ),
    ),
)

_MODE_BY_OP = {(op, d.variant): d for d in MODE_DEFECTS for op in d.ops}


def mode_defect_for(op: str, variant: str) -> ModeDefect | None:
    """The reviewed dispatch-mode defect covering `op` in `variant`, if any."""
    return _MODE_BY_OP.get((op, variant))


class _Bystander(EagerDispatchMode):
    """A dispatch mode that changes nothing itself: PyTorch's behaviour with a mode
    on, without TorchCTS's recording."""

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def bystander_mode() -> Iterator[None]:
    """A do-nothing dispatch mode on while the block runs (to show a `ModeDefect`)."""
    with _Bystander():
        yield


def cpu_disagrees(functional: object, cpu_out: object) -> bool:
    """Does CPU's out= result differ from CPU's functional result (the same sample)?

    Compared bit for bit, NaN equal to NaN: both come from the same CPU kernels, so
    any difference is the defect, not rounding.
    """
    want, got = tensors_in(functional), tensors_in(cpu_out)
    if len(want) != len(got):
        return True
    for a, b in zip(want, got, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            return True
        same = (a == b) | (a.isnan() & b.isnan())
        if not bool(same.all()):
            return True
    return False


def out_metadata_mismatch(expected: object, observed: object) -> str | None:
    """What a defect's reviewed reference judges of an out= result: the same number
    of outputs, each with the functional result's shape and dtype, and out returned.
    (Not strides: out= keeps the strides of the out tensor it was given.)"""
    if not isinstance(expected, dict) or not isinstance(observed, dict):
        return f"output: expected an out= result, got {type(observed).__name__}"
    want, got = tensors_in(expected["output"]), tensors_in(observed.get("output"))
    if len(want) != len(got):
        return f"output: expected {len(want)} tensors, got {len(got)}"
    for i, (a, b) in enumerate(zip(want, got, strict=True)):
        if a.dtype != b.dtype:
            return f"output[{i}]: dtype {b.dtype}, expected {a.dtype}"
        if a.shape != b.shape:
            return f"output[{i}]: shape {list(b.shape)}, expected {list(a.shape)}"
    if observed.get("returns_out") is not True:
        return "output.returns_out: the call did not return its out tensor"
    return None


__all__ = [
    "DEFECTS",
    "MODE_DEFECTS",
    "ModeDefect",
    "UpstreamDefect",
    "bystander_mode",
    "cpu_disagrees",
    "defect_for",
    "mode_defect_for",
    "out_metadata_mismatch",
]
