"""CPU behaviour that depends on how C++ called the kernel survives simdev's boxed
crossing: tensor identity (in-place refusals), reference identity (``addr_``), wrapped
numbers (their precision), the CPU's data-less zero tensor, and ``mode``'s out=.

Every expectation is the CPU's own result on the same inputs, computed in the test."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from torchcts_schema import DEFAULT_UNSUPPORTED_PATTERNS

Run = Callable[[str], torch.Tensor]


def _outcome(run: Run, device: str) -> torch.Tensor | BaseException:
    try:
        return run(device).to("cpu")
    except RuntimeError as exc:
        return exc


def _agree(run: Run) -> torch.Tensor | BaseException:
    """Run on CPU and on simdev: the same exception text, or bitwise-equal results."""
    expected, observed = _outcome(run, "cpu"), _outcome(run, "simdev")
    if isinstance(expected, BaseException):
        assert isinstance(observed, BaseException), f"expected {expected!r}"
        assert str(observed) == str(expected)
        return expected
    assert isinstance(observed, torch.Tensor), f"raised {observed!r}"
    assert observed.dtype == expected.dtype and observed.shape == expected.shape
    assert torch.equal(observed, expected), (observed, expected)
    return expected


def _ones(
    *shape: int, dtype: torch.dtype = torch.float32
) -> Callable[[str], torch.Tensor]:
    return lambda device: torch.ones(*shape, dtype=dtype, device=device)


# In-place calls whose result would need a broadcast self: the CPU refuses them because
# TensorIterator sees self and out= as one tensor; two CPU views of the same bytes
# would have been resized instead.
BROADCAST_INPLACE: dict[str, Run] = {
    "logical_and_": lambda d: _ones(1, dtype=torch.bool)(d).logical_and_(_ones(5)(d)),
    "logical_or_": lambda d: _ones(1, dtype=torch.bool)(d).logical_or_(_ones(5)(d)),
    "logical_xor_": lambda d: _ones(1, dtype=torch.bool)(d).logical_xor_(_ones(5)(d)),
    "ldexp_": lambda d: _ones(1)(d).ldexp_(_ones(5)(d)),
    "add_": lambda d: _ones(1)(d).add_(_ones(5)(d)),
    "addr_ (0-dim self)": lambda d: torch.tensor(1.0, device=d).addr_(
        _ones(5)(d), _ones(10)(d)
    ),
    "addr_ (row self)": lambda d: _ones(1, 10)(d).addr_(_ones(5)(d), _ones(10)(d)),
}


@pytest.mark.parametrize("name", sorted(BROADCAST_INPLACE))
def test_inplace_broadcast_is_refused_as_on_cpu(name: str) -> None:
    """The CPU refuses each of these; simdev refuses with the same message."""
    outcome = _agree(BROADCAST_INPLACE[name])
    assert isinstance(outcome, RuntimeError), f"the CPU no longer refuses {name}"


def test_inplace_result_type_rule_is_enforced_as_on_cpu() -> None:
    """A float result cannot be written into a bool or integer self, on either."""
    cases: list[Run] = [
        lambda d: _ones(3, dtype=torch.bool)(d).logical_and_(_ones(3)(d)).float(),
        lambda d: _ones(3, dtype=torch.bool)(d).add_(_ones(3)(d)),
        lambda d: _ones(3, dtype=torch.int64)(d).ldexp_(_ones(3, dtype=torch.int64)(d)),
        lambda d: _ones(3, 3, dtype=torch.bool)(d).addr_(_ones(3)(d), _ones(3)(d)),
    ]
    outcomes = [_agree(run) for run in cases]
    assert [isinstance(o, RuntimeError) for o in outcomes] == [False, True, True, True]


def test_a_tensor_passed_twice_is_one_tensor_to_the_cpu_kernel() -> None:
    """``x.mul_(x)`` squares in place on both, and returns x itself on simdev."""
    x = torch.arange(4.0, device="simdev")
    assert x.mul_(x) is x
    assert torch.equal(x.to("cpu"), torch.arange(4.0).mul_(torch.arange(4.0)))


@pytest.mark.parametrize("value", [0.6931471805599453, 1 / 3, 1e-3 + 1e-9])
def test_wrapped_numbers_keep_their_precision(value: float) -> None:
    """``bf16 * 0.693...`` multiplies by the unrounded number, as the CPU's wrapped
    number does (rounding it to bfloat16 first changed 11% to 46% of these products)."""
    torch.manual_seed(0)
    x = (torch.randn(256) * 10).to(torch.bfloat16)
    runs: list[Run] = [
        lambda d: x.to(d) * value,
        lambda d: x.to(d) / value,
        lambda d: x.to(d) + value,
        lambda d: x.to(d).sub(value, alpha=3),
        lambda d: x.to(d)[0] * value,  # 0-dim: the wrapped number must not promote it
        lambda d: torch.fmod(x.to(d), value),
        lambda d: torch.where(x.to(d) > 0, x.to(d), value),
        lambda d: torch.where(x.to(d) > 0, x.to(d).long(), value),  # int and float
        lambda d: x.to(d).long() & 3,
    ]
    for run in runs:
        _agree(run)


def test_cpu_zero_tensor_has_no_data_and_simdev_materialises_zeros() -> None:
    """sgn's gradient of a real input is ``_efficientzerotensor``: on the CPU a tensor
    without data (a payload cannot wrap it), on simdev zeros with the same values."""
    with pytest.raises(RuntimeError, match="invalid python storage"):
        torch._efficientzerotensor((3,)).untyped_storage().data_ptr()
    for op in (torch.sgn, torch.sinc):

        def grad(device: str, op: Callable[..., torch.Tensor] = op) -> torch.Tensor:
            torch.manual_seed(0)
            x = torch.randn(5).to(device).requires_grad_(True)
            (result,) = torch.autograd.grad(op(x).sum(), x)
            return result

        _agree(grad)
    zeros = torch._efficientzerotensor((2, 3), device="simdev")
    assert zeros.device.type == "simdev" and torch.equal(zeros.cpu(), torch.zeros(2, 3))


def test_mode_out_runs_and_pytorch_generic_mode_values_refuses_the_device() -> None:
    """PyTorch's generic ``mode.values`` refuses every device but CPU, CUDA and XPU,
    so simdev registers its own (as a C++ backend must). If PyTorch lifts the check,
    the first assertion fails and simdev's explicit kernel can go. A backend without
    one gets ``unsupported``: the message matches the default unsupported patterns."""
    x = torch.randn(3, 4, device="simdev")
    values = torch.empty(3, device="simdev")
    indices = torch.empty(3, dtype=torch.long, device="simdev")
    generic = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)
    with pytest.raises(RuntimeError, match="mode only supports CPU") as info:
        torch.ops.aten.mode.values.redispatch(
            generic, x, 1, False, values=values, indices=indices
        )
    message = f"RuntimeError: {info.value}"
    assert any(re.search(p, message, re.I) for p in DEFAULT_UNSUPPORTED_PATTERNS)

    def mode_out(device: str) -> torch.Tensor:
        torch.manual_seed(0)
        source = torch.randint(0, 3, (4, 6)).float().to(device)
        out = (
            torch.empty(4, device=device),
            torch.empty(4, dtype=torch.long, device=device),
        )
        torch.mode(source, 1, out=out)
        return torch.stack([out[0], out[1].float()])

    _agree(mode_out)
