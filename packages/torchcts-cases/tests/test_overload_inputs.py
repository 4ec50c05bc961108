"""Calls built from an aten overload's schema alone (`overload_inputs`), and the
forked probe the index build tries them in (`forked`)."""

from __future__ import annotations

import os
import signal

import pytest
import torch
from torchcts_cases.forked import run_forked
from torchcts_cases.overload_inputs import PLANS, NoValue, schema_call


def test_plans_are_every_shape_in_float32_then_int64() -> None:
    """The plan numbers the index stores name fixed shapes and dtypes; the later
    shapes come after the first ones, in both dtypes."""
    assert PLANS[0] == ((2, 3), "float32")
    assert PLANS[1] == ((3,), "float32")
    assert PLANS[4] == ((2, 3), "int64")
    assert PLANS[8] == ((3, 3), "float32")
    assert PLANS[11] == ((1, 2, 4, 4, 4), "int64")
    assert len(PLANS) == 12


def test_a_mask_is_boolean() -> None:
    """_masked_softmax's mask is a bool tensor of the plan's shape, every other
    element set."""
    self, mask = schema_call("_masked_softmax", 0)[0][:2]
    assert self.dtype == torch.float32
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[True, False, True], [False, True, False]]


def test_tensor_arguments_share_the_plans_shape_and_defaults_are_left() -> None:
    """add.Tensor: two float32 (2, 3) tensors in [0.5, 1.5); alpha keeps its
    default (not passed)."""
    args, kwargs = schema_call("add.Tensor", 0)
    assert kwargs == {} and len(args) == 2
    for t in args:
        assert t.shape == (2, 3) and t.dtype == torch.float32
        assert bool(((t >= 0.5) & (t < 1.5)).all())
    assert not torch.equal(args[0], args[1])  # drawn per argument position


def test_index_dim_and_size_arguments() -> None:
    """index_select: dim 0 and an int64 zeros index (valid for any size);
    adaptive_avg_pool2d's output_size (int[2]) is the plan's last two sizes."""
    self, dim, index = schema_call("index_select", 1)[0]
    assert self.shape == (3,) and dim == 0
    assert index.dtype == torch.int64 and index.tolist() == [0, 0, 0]
    assert schema_call("adaptive_avg_pool2d", 3)[0][1] == [4, 4]


def test_a_foreach_op_gets_two_tensors_and_a_scalar_for_each() -> None:
    """_foreach_add.ScalarList: a list of two tensors and one scalar per tensor."""
    tensors, scalars = schema_call("_foreach_add.ScalarList", 0)[0]
    assert [t.shape for t in tensors] == [(2, 3), (2, 3)]
    assert scalars == [0.5, 2]


def test_an_int64_plan_draws_integers() -> None:
    """Plan 4 is int64: values 1..3."""
    a, b = schema_call("add.Tensor", 4)[0]
    assert a.dtype == torch.int64
    assert set(torch.cat([a, b]).reshape(-1).tolist()) <= {1, 2, 3}


def test_the_same_plan_builds_the_same_call() -> None:
    """A case rebuilds its call from the plan number: the values repeat exactly."""
    first, second = schema_call("lerp.Scalar", 2), schema_call("lerp.Scalar", 2)
    assert all(
        torch.equal(x, y) for x, y in zip(first[0][:2], second[0][:2], strict=True)
    )
    assert first[0][2] == 2  # a Scalar without a default


def test_a_str_argument_without_a_hint_has_no_value() -> None:
    """_convolution_mode's padding (str, no default) is not guessed."""
    with pytest.raises(NoValue, match="'padding' \\(str\\)"):
        schema_call("_convolution_mode", 0)


def test_a_forked_result_comes_back() -> None:
    """A child's JSON result is returned to the parent."""
    assert run_forked(lambda: {"answer": [1, 2]}) == {"answer": [1, 2]}


def test_a_crashing_child_is_reported_not_fatal() -> None:
    """A child killed by a signal is a RuntimeError naming the signal (SIGKILL:
    pytest's faulthandler would print a SIGSEGV child's stack into the output)."""

    def crash() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(RuntimeError, match=f"signal {int(signal.SIGKILL)}"):
        run_forked(crash)
