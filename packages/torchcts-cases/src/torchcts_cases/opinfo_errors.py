"""How an OpInfo error input is judged: the CPU's exception is the expected behaviour,
with the two allowances PyTorch's own ``test_errors`` makes (a call that returns
``NotImplemented`` rejects its operands; an input PyTorch's review calls legal is a
call like any other).

A device must raise the CPU's exception type with a message matching OpInfo's
pattern, unless OpInfo's generator, asked for that device, expects another error for
the same input: some ops check their arguments in a CPU kernel of their own, and every
other device reaches a generic kernel that raises otherwise (``narrow_copy``: the CPU
says "Expected dim < ...", the generic ``narrow`` "Dimension out of range"). PyTorch's
test_errors builds the error inputs for the device under test, so its expectation for
that device is the contract there. A backend's "not implemented" stays unsupported
unless the CPU said the same.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from torchcts_cases import opinfo_source
from torchcts_cases.compare import RaisedError
from torchcts_cases.opinfo_marks import errors_marked_failing
from torchcts_cases.spec import OracleUnavailable

DEVICE_ERROR_NOTE = (
    "OpInfo expects another error for this input on this device type than on the "
    "CPU (a CPU-only kernel checks it first): judged against OpInfo's expectation "
    "for the device"
)
LEGAL_CALL_NOTE = (
    "OpInfo lists this input as an error, but PyTorch marks its own test_errors an "
    "expected failure for the op and the CPU accepts the call: judged against the "
    "CPU's result"
)


class ReturnedNotImplemented(AssertionError):
    """An error input's call returned ``NotImplemented`` instead of raising.

    A reflected binary dunder (``Tensor.__rsub__(2, 3)``) rejects operands it cannot
    take by returning ``NotImplemented``; PyTorch's test_errors asserts the result is
    not ``NotImplemented`` inside its ``assertRaises``, so that AssertionError is the
    error it expects. Raising this one subclass keeps the same meaning here, on the
    CPU and on the device alike."""


def reject_not_implemented(result: object) -> None:
    """Raise `ReturnedNotImplemented` when an error input's call returned it."""
    if result is NotImplemented:
        raise ReturnedNotImplemented(
            "returned NotImplemented: Python's rejection of the operands, which "
            "PyTorch's own test_errors counts as the error"
        )


def expected_error(op: Any, item: Any, result: object) -> tuple[object, bool]:
    """The expected behaviour of error input `item` of `op` from the CPU's `result`
    (a `RaisedError` or a value), and whether it is a legal call judged on values.

    Where the CPU returns a result and PyTorch marks its own test_errors an expected
    failure for the op, PyTorch's review says the input is a legal call: the device
    is judged against the CPU's result (the record's note says why). Otherwise a CPU
    that does not raise, or raises something else than OpInfo says, leaves no
    reference: OpInfo or the CPU is wrong, and nobody has reviewed which."""
    wanted = item.error_type.__name__
    if not isinstance(result, RaisedError):
        if errors_marked_failing(op):
            return result, True
        raise OracleUnavailable(
            f"CPU did not raise for OpInfo error input (expected {wanted})"
        )
    if wanted not in result.mro or not re.search(item.error_regex, result.message):
        raise OracleUnavailable(
            f"CPU raised {result.type_name}: {result.message[:120]!r}, not "
            f"{wanted} matching {item.error_regex!r} as OpInfo says"
        )
    return RaisedError(wanted, result.message, result.mro, item.error_regex), False


def device_expectation(
    op: Any, index: int, device: str, cpu_item: Any, expected: RaisedError
) -> RaisedError | None:
    """OpInfo's expected error for error input `index` of `op` as its generator
    builds it for `device`, when that is another error than the CPU's for the same
    call (same tensor shapes and dtypes, same other arguments); None otherwise,
    including when the generator cannot build it there or builds another call."""
    try:
        there = opinfo_source.nth_item_on(op, "error_inputs", None, index, device)
    except OracleUnavailable:
        return None
    if (there.error_type, there.error_regex) == (
        cpu_item.error_type,
        cpu_item.error_regex,
    ):
        return None
    if _call_shape(there.sample_input) != _call_shape(cpu_item.sample_input):
        return None
    return RaisedError(
        there.error_type.__name__, expected.message, expected.mro, there.error_regex
    )


def _call_shape(sample: Any) -> object:
    """A sample's call with each tensor replaced by its shape and dtype."""

    def shape(obj: object) -> object:
        if isinstance(obj, torch.Tensor):
            return ("tensor", tuple(obj.shape), obj.dtype)
        if isinstance(obj, list | tuple):
            return (type(obj).__name__, tuple(shape(o) for o in obj))
        if isinstance(obj, dict):
            return tuple(sorted((k, repr(shape(v))) for k, v in obj.items()))
        return repr(obj)

    return shape((sample.input, sample.args, sample.kwargs))


def is_unsupported(
    patterns: tuple[str, ...], exc: BaseException, expected: RaisedError
) -> bool:
    """A backend 'not implemented' is reported as such, unless CPU said the same."""
    text = f"{type(exc).__name__}: {exc}"
    cpu_said = f"{expected.type_name}: {expected.message}"
    return any(re.search(p, text) and not re.search(p, cpu_said) for p in patterns)


__all__ = [
    "DEVICE_ERROR_NOTE",
    "LEGAL_CALL_NOTE",
    "ReturnedNotImplemented",
    "device_expectation",
    "expected_error",
    "is_unsupported",
    "reject_not_implemented",
]
