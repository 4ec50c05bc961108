"""The non-crash fault kinds corrupt exactly what they say, and only where they match."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torchcts_schema import DEFAULT_UNSUPPORTED_PATTERNS

Inject = Callable[..., object]


def _host() -> torch.Tensor:
    return torch.linspace(-2, 2, 12).reshape(3, 4)


def test_wrong_values_small_fails_default_tolerance_but_stays_close(
    inject: Inject,
) -> None:
    """small: just past assert_close's default float32 tolerance, within 1e-3."""
    inject(op="aten::sin.out", fault="wrong_values", magnitude="small")
    got = torch.sin(_host().to("simdev")).cpu()
    expected = torch.sin(_host())
    with pytest.raises(AssertionError):
        torch.testing.assert_close(got, expected)
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_wrong_values_small_fails_in_every_float_dtype(
    inject: Inject, dtype: torch.dtype
) -> None:
    """small errors exceed the default tolerance of each floating dtype."""
    inject(op="aten::sin.out", fault="wrong_values")
    host = _host().to(dtype)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(torch.sin(host.to("simdev")).cpu(), torch.sin(host))


def test_wrong_values_large_is_far_off(inject: Inject) -> None:
    """large: every element off by at least 1."""
    inject(op="aten::sin.out", fault="wrong_values", magnitude="large")
    diff = torch.sin(_host().to("simdev")).cpu() - torch.sin(_host())
    assert diff.abs().min() >= 1


def test_wrong_values_on_integers_and_bools(inject: Inject) -> None:
    """Integer outputs are off by one (small); boolean outputs are flipped."""
    inject(op=["aten::add.out", "aten::eq.Tensor_out"], fault="wrong_values")
    ints = torch.arange(4)
    assert torch.equal((ints.to("simdev") + 1).cpu(), ints + 2)
    flags = (ints.to("simdev") == ints.to("simdev")).cpu()
    assert not flags.any()


def test_wrong_values_reaches_inplace_results(inject: Inject) -> None:
    """An in-place op writes the wrong values into its input."""
    inject(op="aten::mul.out", fault="wrong_values", magnitude="large", inplace=True)
    x = torch.ones(3, device="simdev")
    assert x.mul_(2) is x
    assert torch.all(x.cpu() >= 5)
    assert torch.equal((x * 1).cpu(), x.cpu())  # functional calls untouched


def test_wrong_dtype_changes_the_result_dtype(inject: Inject) -> None:
    """float32 results come back as float64, with the right values."""
    inject(op="aten::exp.out", fault="wrong_dtype")
    got = torch.exp(_host().to("simdev"))
    assert got.dtype == torch.float64
    torch.testing.assert_close(got.cpu().float(), torch.exp(_host()))


def test_wrong_shape_adds_a_leading_dimension(inject: Inject) -> None:
    """The result gains a leading dimension of size 1; values are unchanged."""
    inject(op="aten::sum.IntList_out", fault="wrong_shape")
    got = _host().to("simdev").sum(dim=1)
    assert got.shape == (1, 3)
    torch.testing.assert_close(got.cpu()[0], _host().sum(dim=1))


@pytest.mark.parametrize("shape", [(3, 4), (5,), ()])
def test_wrong_strides_keeps_values_and_shape(inject: Inject, shape: tuple) -> None:
    """Results keep values and shape but report different strides (or offset)."""
    inject(op="aten::neg.out", fault="wrong_strides")
    host = torch.randn(shape)
    got = torch.neg(host.to("simdev"))
    expected = torch.neg(host)
    assert got.shape == expected.shape
    assert torch.equal(got.cpu(), expected)
    assert (got.stride(), got.storage_offset()) != (
        expected.stride(),
        expected.storage_offset(),
    )


def test_not_implemented_reads_as_unsupported(inject: Inject) -> None:
    """not_implemented raises NotImplementedError worded like PyTorch's own."""
    import re

    inject(op="aten::where.self", fault="not_implemented")
    x = torch.ones(3, device="simdev")
    with pytest.raises(NotImplementedError) as info:
        torch.where(x > 0, x, -x)
    message = str(info.value)
    assert (
        "Could not run 'aten::where.self' with arguments from the 'simdev'" in message
    )
    assert any(re.search(p, message) for p in DEFAULT_UNSUPPORTED_PATTERNS)


def test_runtime_error_does_not_read_as_unsupported(inject: Inject) -> None:
    """runtime_error raises a RuntimeError no unsupported pattern matches."""
    import re

    inject(op="aten::mm.out", fault="runtime_error")
    x = torch.ones(2, 2, device="simdev")
    with pytest.raises(RuntimeError) as info:
        x @ x
    message = str(info.value)
    assert "rule 0 on aten::mm.out" in message
    assert not any(re.search(p, message) for p in DEFAULT_UNSUPPORTED_PATTERNS)


def test_break_alias_makes_views_copies(inject: Inject) -> None:
    """A view op returns a copy: writes to the base no longer show in the view."""
    inject(op="aten::view", fault="break_alias")
    base = torch.zeros(2, 3, device="simdev")
    view = base.view(6)
    assert torch.equal(view.cpu(), torch.zeros(6))
    base.fill_(1)
    assert torch.equal(view.cpu(), torch.zeros(6))
    assert view.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()


def test_drop_inplace_leaves_the_input_unchanged(inject: Inject) -> None:
    """An in-place op returns its input object, but never writes to it."""
    inject(op="aten::add.out", fault="drop_inplace", inplace=True)
    x = torch.ones(3, device="simdev")
    assert x.add_(5) is x
    assert torch.equal(x.cpu(), torch.ones(3))
    assert torch.equal((x + 5).cpu(), torch.full((3,), 6.0))  # functional unaffected


def test_drop_inplace_on_a_non_structured_inplace_op(inject: Inject) -> None:
    """Ops that reach the backend as in-place overloads also drop their write."""
    inject(op="aten::fill_.Scalar", fault="drop_inplace")
    x = torch.arange(3.0, device="simdev")
    assert x.fill_(9) is x
    assert torch.equal(x.cpu(), torch.arange(3.0))


@pytest.mark.parametrize(
    ("narrowing", "hit"),
    [
        ({"dtype": "float64"}, False),
        ({"dtype": ["float64", "float32"]}, True),
        ({"ndim": 2}, True),
        ({"ndim": 0}, False),
        ({"shape": [3, 4]}, True),
        ({"shape": [4, 3]}, False),
        ({"min_numel": 13}, False),
        ({"max_numel": 12}, True),
        ({"inplace": True}, False),
        ({"inplace": False}, True),
    ],
)
def test_narrowing_keys_select_calls(
    inject: Inject, narrowing: dict, hit: bool
) -> None:
    """dtype, ndim, shape, numel bounds and inplace decide which calls a rule hits."""
    inject(op="aten::sin.out", fault="runtime_error", **narrowing)
    x = _host().to("simdev")
    if hit:
        with pytest.raises(RuntimeError, match="simdev kernel failed"):
            torch.sin(x)
    else:
        assert torch.equal(torch.sin(x).cpu(), torch.sin(_host()))


def test_first_matching_rule_wins() -> None:
    """Rules are tried in order; a later rule only sees calls earlier ones skip."""
    import torchcts_simdev

    torchcts_simdev.configure(
        {
            "rules": [
                {"op": "aten::sin.out", "ndim": 0, "fault": "not_implemented"},
                {"op": "aten::sin*", "fault": "runtime_error"},
            ]
        }
    )
    with pytest.raises(NotImplementedError):
        torch.sin(torch.ones((), device="simdev"))
    with pytest.raises(RuntimeError, match="rule 1"):
        torch.sin(torch.ones(2, device="simdev"))


def test_clean_profile_injects_nothing() -> None:
    """Switching back to clean drops every rule and cached lookup."""
    import torchcts_simdev

    torchcts_simdev.configure({"rules": [{"op": "*", "fault": "runtime_error"}]})
    with pytest.raises(RuntimeError):
        torch.ones(2, device="simdev")
    torchcts_simdev.configure("clean")
    assert torch.equal(torch.ones(2, device="simdev").cpu(), torch.ones(2))


def test_poison_raises_then_every_later_op_fails(inject: Inject) -> None:
    """poison: its op raises a device fault, then every simdev op raises, naming it."""
    import re

    import torchcts_simdev

    inject(op="aten::sin.out", dtype="float32", fault="poison")
    x = _host().to("simdev")
    assert torch.equal((x + 1).cpu(), _host() + 1)  # healthy before the fault
    with pytest.raises(RuntimeError, match="device fault 0x2b") as info:
        torch.sin(x)
    assert not any(re.search(p, str(info.value)) for p in DEFAULT_UNSUPPORTED_PATTERNS)
    torchcts_simdev.configure("clean")  # a sticky error outlives the profile
    later = [
        lambda: x + 1,
        lambda: x.cpu(),
        lambda: torch.ones(2, device="simdev"),
        lambda: torch.arange(3).to("simdev"),
    ]
    for call in later:
        with pytest.raises(RuntimeError) as info:
            call()
        message = str(info.value)
        assert message.startswith("simdev device is in an error state (poisoned by ")
        assert "aten::sin.out, simdev fault profile 'test' rule 0" in message
        assert "until the process restarts" in message
        assert not any(re.search(p, message) for p in DEFAULT_UNSUPPORTED_PATTERNS)


def test_poison_only_where_its_rule_matches(inject: Inject) -> None:
    """Calls the rule does not match (another dtype) leave the device working."""
    inject(op="aten::sin.out", dtype="float32", fault="poison")
    doubles = _host().double()
    assert torch.equal(torch.sin(doubles.to("simdev")).cpu(), torch.sin(doubles))
    assert torch.equal((_host().to("simdev") * 2).cpu(), _host() * 2)


def test_flush_nonfinite_touches_only_nan_and_inf(inject: Inject) -> None:
    """NaN becomes 0 and +-Inf the largest floats; a finite result is left exact."""
    inject(op="aten::maximum.out", fault="flush_nonfinite")
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.5])
    got = torch.maximum(x.to("simdev"), x.to("simdev")).cpu()
    big = torch.finfo(torch.float32).max
    assert got.tolist() == [0.0, big, -big, 1.5]
    finite = _host()
    on_dev = finite.to("simdev")
    assert torch.equal(torch.maximum(on_dev, on_dev).cpu(), finite)
