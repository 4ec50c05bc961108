"""Reviewed calls for aten overloads whose arguments must agree with each other in
ways a schema cannot say, and that no OpInfo sample reaches: a convolution's weight
has the input's channels, a padding backward's gradient has the padded shape, a
gradient scaler's scale is a 1-element tensor, a fused optimizer's step counts are
0-dim floats. `overload_inputs` fills each argument alone and CPU rejects every such
call, so these few are written by hand, like an OpInfo sample function.

A recipe is keyed by the functional overload it calls (`functional_sibling`), so
one recipe serves its out=, in-place and multi-write siblings too (``_fused_adam``
serves ``_fused_adam.out`` and ``_fused_adam_``). It returns the call's CPU
arguments and the dtype that names its cases; tensors come from a generator seeded
by the overload's name, so every process rebuilds the same call (`recipe_call`).
Shapes are the smallest that reach the kernel's general path (a 3x3 kernel over a
5x5 image, two channels into three, a batch of two).
"""

from __future__ import annotations

# the recipe modules register themselves into RECIPES when imported
from torchcts_cases import overload_recipes_nn, overload_recipes_training
from torchcts_cases.overload_capture import Call
from torchcts_cases.overload_recipe_kit import RECIPES, Draw

MODULES = (overload_recipes_training, overload_recipes_nn)


def recipe_call(name: str) -> Call:
    """The call of overload `name`'s recipe (KeyError when it has none)."""
    return RECIPES[name][1](Draw(name))


def recipe_dtype(name: str) -> str:
    """The dtype a recipe's cases are named by."""
    return RECIPES[name][0]


__all__ = ["MODULES", "RECIPES", "recipe_call", "recipe_dtype"]
