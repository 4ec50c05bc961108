"""Reviewed recipes (see `overload_recipes`) for the multi-tensor and
normalisation kernels: gradient scaling, fused optimizer steps, foreach ops with a
tensor of scalars, batch norm's private entry points, and complex views as copies."""

from __future__ import annotations

import functools
from typing import Any

import torch

from torchcts_cases.overload_capture import Call
from torchcts_cases.overload_recipe_kit import RECIPES, Draw, recipe


# -- gradient scaling and fused optimizer steps ---------------------------------------
@recipe("_amp_foreach_non_finite_check_and_unscale")
def _unscale(d: Draw) -> Call:
    # one gradient holds an inf: found_inf is set, and the others are still unscaled
    grads = [d.pos(2, 3), d.pos(4)]
    grads[1][2] = torch.inf
    return (grads, torch.zeros(1), torch.full((1,), 0.5)), {}


@recipe("_amp_update_scale")
def _update_scale(d: Draw) -> Call:
    # the tracker reaches the growth interval: the scale doubles, the tracker resets
    tracker = torch.ones(1, dtype=torch.int32)
    return (torch.full((1,), 4.0), tracker, torch.zeros(1), 2.0, 0.5, 2), {}


def _optimizer_lists(d: Draw, count: int) -> list[list[torch.Tensor]]:
    """`count` lists of two tensors shaped like two parameters, (2, 3) and (4,)."""
    return [[d.pos(2, 3), d.pos(4)] for _ in range(count)]


def _steps() -> list[torch.Tensor]:
    """Each parameter's step count: a 0-dim float, as torch.optim keeps it."""
    return [torch.tensor(3.0), torch.tensor(3.0)]


def _lr(tensor_lr: bool) -> Any:
    return torch.tensor(0.1) if tensor_lr else 0.1


def _adam(d: Draw, tensor_lr: bool, amsgrad: bool) -> Call:
    params, grads, avgs, sqs, maxes = _optimizer_lists(d, 5)
    options = {"lr": _lr(tensor_lr), "beta1": 0.9, "beta2": 0.99}
    options |= {"weight_decay": 0.01, "eps": 1e-8, "amsgrad": amsgrad}
    options["maximize"] = False
    maxes = maxes if amsgrad else []
    return (params, grads, avgs, sqs, maxes, _steps()), options


def _sgd(d: Draw, tensor_lr: bool) -> Call:
    options = {"weight_decay": 0.01, "momentum": 0.9, "lr": _lr(tensor_lr)}
    options |= {"dampening": 0.0, "nesterov": True, "maximize": False}
    options["is_first_step"] = False
    return tuple(_optimizer_lists(d, 3)), options


def _adagrad(d: Draw, tensor_lr: bool) -> Call:
    options = {"lr": _lr(tensor_lr), "lr_decay": 0.01, "weight_decay": 0.01}
    options |= {"eps": 1e-10, "maximize": False}
    return (*_optimizer_lists(d, 3), _steps()), options


for _tensor_lr in (False, True):
    _suffix = ".tensor_lr" if _tensor_lr else ""
    # Adam plain, AdamW with amsgrad: both kernels' branches
    RECIPES[f"_fused_adam{_suffix}"] = (
        "float32",
        functools.partial(_adam, tensor_lr=_tensor_lr, amsgrad=False),
    )
    RECIPES[f"_fused_adamw{_suffix}"] = (
        "float32",
        functools.partial(_adam, tensor_lr=_tensor_lr, amsgrad=True),
    )
    RECIPES[f"_fused_sgd{_suffix}"] = (
        "float32",
        functools.partial(_sgd, tensor_lr=_tensor_lr),
    )
    RECIPES[f"_fused_adagrad{_suffix}"] = (
        "float32",
        functools.partial(_adagrad, tensor_lr=_tensor_lr),
    )


@recipe("_foreach_addcdiv.Tensor")
def _foreach_addcdiv(d: Draw) -> Call:
    # `scalars` holds one value per tensor of the lists
    lists = _optimizer_lists(d, 3)
    return (*lists, torch.tensor([0.5, 2.0])), {}


RECIPES["_foreach_addcmul.Tensor"] = ("float32", _foreach_addcdiv)
# a 0-dim tensor operand, one value for every tensor of the list
for _name in ("_foreach_add.Tensor", "_foreach_mul.Tensor", "_foreach_div.Tensor"):
    recipe(_name)(lambda d: ((_optimizer_lists(d, 1)[0], torch.tensor(0.75)), {}))


# -- batch norm's private entry points ------------------------------------------------
def _norm_args(d: Draw) -> tuple[torch.Tensor, ...]:
    """input (2, 3, 4, 4) and its 3 channels' weight, bias, running mean and var."""
    return (d.pos(2, 3, 4, 4), d.pos(3), d.pos(3), d.pos(3), d.pos(3))


for _name in ("_batch_norm_with_update", "_batch_norm_with_update_functional"):
    recipe(_name)(lambda d: ((*_norm_args(d), 0.1, 1e-5), {}))
for _name in ("_batch_norm_no_update", "_native_batch_norm_legit_no_training"):
    recipe(_name)(lambda d: ((*_norm_args(d), 0.1, 1e-5), {}))
recipe("_native_batch_norm_legit_functional")(
    lambda d: ((*_norm_args(d), True, 0.1, 1e-5), {})
)


# -- complex views as copies -----------------------------------------------------------
def _complex(d: Draw) -> Call:
    return (torch.complex(d.pos(2, 3), d.signed(2, 3)),), {}


recipe("_conj_copy", "complex64")(_complex)
recipe("view_as_real_copy", "complex64")(_complex)
recipe("view_as_complex_copy")(lambda d: ((d.signed(2, 3, 2),), {}))
