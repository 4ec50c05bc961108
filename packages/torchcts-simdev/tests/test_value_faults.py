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


def test_wrong_values_on_dtypes_without_an_add_kernel(inject: Inject) -> None:
    """uint16/32/64 are off by one (through int64, wrapping); float8 codes move one
    step away from zero (toward it at the largest finite value), NaN stays NaN."""
    inject(op="aten::_to_copy", dtype="float64", fault="wrong_values")
    # uploaded as float32: only the device's casts from float64 match the rule
    wide = torch.tensor([0.0, 65535.0, 2.0**63]).to("simdev").double()
    assert wide.to(torch.uint16).cpu().tolist() == [1, 0, 1]
    assert wide.to(torch.uint64).cpu().tolist() == [1, 65536, 2**63 + 1]
    values = [0.0, -0.0, 1.0, 448.0, -448.0, float("nan")]
    got = torch.tensor(values).to("simdev").double()
    codes = got.to(torch.float8_e4m3fn).cpu().view(torch.uint8).tolist()
    assert codes == [0x01, 0x81, 0x39, 0x7D, 0xFD, 0x7F]


def test_wrong_values_large_on_float8_is_far_off(inject: Inject) -> None:
    """large: float8 results get 1 + |x| added (in float32, rounded back)."""
    inject(
        op="aten::_to_copy", dtype="float64", fault="wrong_values", magnitude="large"
    )
    got = torch.tensor([1.0, -2.0]).to("simdev").double()
    assert got.to(torch.float8_e5m2).cpu().float().tolist() == [3.0, 1.0]


def test_conj_physical_inplace_runs_on_simdev() -> None:
    """conj_physical_ has a simdev kernel (its generic one calls a DispatchStub that
    only built-in devices fill): it conjugates in place."""
    z = torch.tensor([1 + 2j, -3 - 0.5j]).to("simdev")
    assert z.conj_physical_() is z
    assert torch.equal(z.cpu(), torch.tensor([1 - 2j, -3 + 0.5j]))


@pytest.mark.parametrize("args", [(9,), (9, False), (9, True, 8.0), (1,), (0,)])
def test_kaiser_window_runs_on_simdev(args: tuple[object, ...]) -> None:
    """Every kaiser_window overload has a simdev kernel (the generic ones call a
    DispatchStub that only built-in devices fill): CPU's values, on simdev."""
    window = torch.kaiser_window(*args, device="simdev")  # type: ignore[call-overload]
    assert window.device.type == "simdev"
    assert torch.equal(window.cpu(), torch.kaiser_window(*args))  # type: ignore[call-overload]


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
        ({"expanded": True}, False),
        ({"expanded": False}, True),
    ],
)
def test_narrowing_keys_select_calls(
    inject: Inject, narrowing: dict, hit: bool
) -> None:
    """dtype, ndim, shape, numel bounds, inplace and expanded decide which calls a
    rule hits."""
    inject(op="aten::sin.out", fault="runtime_error", **narrowing)
    x = _host().to("simdev")
    if hit:
        with pytest.raises(RuntimeError, match="simdev kernel failed"):
            torch.sin(x)
    else:
        assert torch.equal(torch.sin(x).cpu(), torch.sin(_host()))


def test_expanded_rules_hit_only_stride_zero_inputs(inject: Inject) -> None:
    """ "expanded": true hits a call whose first tensor has a stride-0 dim of size
    > 1 (expand, broadcast_to), not the same values stored densely, nor a size-1
    dim expanded to size 1."""
    inject(op="aten::sum*", fault="wrong_values", expanded=True)
    row = torch.arange(4.0).to("simdev")
    expanded = row.view(1, 4).expand(3, 4)
    assert expanded.stride() == (0, 1)
    assert not torch.equal(expanded.sum(0).cpu(), torch.arange(4.0) * 3)
    assert torch.equal(expanded.contiguous().sum(0).cpu(), torch.arange(4.0) * 3)
    assert torch.equal(row.view(1, 4).expand(1, 4).sum(0).cpu(), torch.arange(4.0))


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
