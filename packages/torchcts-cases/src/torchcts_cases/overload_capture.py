"""Calls of aten overloads captured from OpInfo samples, the inputs of generated
overload cases.

An OpInfo sample run on CPU dispatches concrete overloads with concrete arguments
(``torch.add(a, 2)`` reaches ``aten::add.Tensor``; ``relu``'s backward reaches
``aten::threshold_backward`` with the gradient autograd computed). A dispatch mode
snapshots those arguments, so a case can call a sibling overload with exactly what
PyTorch itself would pass. A `Donor` names the sample; replaying it (same generation
seed, same case seed) captures the same call in every process.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from torchcts_cases import opinfo_source
from torchcts_cases.dispatch_recorder import EagerDispatchMode
from torchcts_cases.spec import OracleUnavailable, case_seed
from torchcts_cases.transfer import backward_loss, tensors_in

Call = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Donor:
    """Sample 0 of one OpInfo op in one dtype, run forward (and backward when
    `grad`): its CPU run is where captured calls come from."""

    op: str  # OpInfo case-id segment
    dtype: str
    grad: bool

    @property
    def seed(self) -> int:
        """The case seed every replay of this donor runs under."""
        return case_seed(f"aten-donor/{self.op}/{self.dtype}/{self.grad}")

    def to_dict(self) -> dict[str, Any]:
        """The index's form."""
        return {"op": self.op, "dtype": self.dtype, "grad": self.grad}


def snapshot(value: Any) -> Any:
    """A detached copy of a captured argument with the same sizes and strides
    (stride 0 included: the covered storage span is copied and viewed again)."""
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.layout != torch.strided or t.is_quantized or t.device.type != "cpu":
            return t.clone()
        if t.numel() == 0:
            return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype)
        span = 1 + sum((n - 1) * s for n, s in zip(t.size(), t.stride(), strict=True))
        flat = t.as_strided((span,), (1,), t.storage_offset()).clone()
        return flat.as_strided(t.size(), t.stride(), 0)
    if isinstance(value, list):
        return [snapshot(v) for v in value]
    if isinstance(value, tuple):
        return tuple(snapshot(v) for v in value)
    return value


def copy_call(call: Call) -> Call:
    """A fresh copy of a captured call (a case mutates what it is given)."""
    args, kwargs = call
    return snapshot(args), {k: snapshot(v) for k, v in kwargs.items()}


class CallCapture(EagerDispatchMode):
    """Snapshots the first call of every overload dispatched (or only of `wanted`)."""

    def __init__(self, wanted: str | None = None) -> None:
        super().__init__()
        self.wanted = wanted
        self.calls: dict[str, Call] = {}

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        """Note the call (before it runs, so in-place ones are seen unchanged)."""
        kwargs = kwargs or {}
        name = func.name().removeprefix("aten::")
        if name not in self.calls and self.wanted in (None, name):
            self.calls[name] = copy_call((tuple(args), dict(kwargs)))
        return func(*args, **kwargs)


def donor_calls(donor: Donor, wanted: str | None = None) -> dict[str, Call]:
    """The calls one donor's CPU run dispatches (those before any error it raises)."""
    op = opinfo_source.find_op(donor.op)
    variant = "backward" if donor.grad else "forward"
    dtype = getattr(torch, donor.dtype)
    sample = opinfo_source.build_sample(op, variant, dtype, 0, donor.seed)
    capture = CallCapture(wanted)
    try:
        with warnings.catch_warnings(), capture:
            warnings.simplefilter("ignore")
            result = op.op(sample.input, *sample.args, **sample.kwargs)
            if donor.grad:
                _backward(sample, result)
    except Exception:  # what ran before the error was still dispatched
        pass
    return capture.calls


def captured_call(donor: Donor, overload: str) -> Call:
    """The first call of `overload` in `donor`'s run; OracleUnavailable when this
    torch's sample no longer makes it."""
    calls = donor_calls(donor, overload)
    if overload not in calls:
        raise OracleUnavailable(
            f"OpInfo {donor.op} ({donor.dtype}, sample 0"
            f"{', backward' if donor.grad else ''}) no longer calls aten::{overload}"
        )
    return calls[overload]


def _backward(sample: Any, result: Any) -> None:
    """Reverse mode through the sample's differentiable outputs, as OpInfo's
    backward cases run it."""
    outputs = [
        t for t in tensors_in(sample.output_process_fn_grad(result)) if t.requires_grad
    ]
    leaves = [
        t
        for t in tensors_in([sample.input, list(sample.args), sample.kwargs])
        if t.requires_grad
    ]
    if not outputs or not leaves:
        return
    loss = backward_loss(outputs)
    torch.autograd.grad(loss, leaves, allow_unused=True)
