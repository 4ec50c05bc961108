"""The parts every reviewed recipe (`overload_recipes`) is written with: `Draw`,
deterministic tensors seeded by the overload's name, and `recipe`, the decorator
that registers a recipe under the functional overload it calls."""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchcts_cases.overload_capture import Call
from torchcts_cases.spec import case_seed


class Draw:
    """Deterministic tensors for one recipe: floats in [0.5, 1.5) (positive, away
    from poles), signed ones in [-1, 1), integers in a range."""

    def __init__(self, name: str) -> None:
        self.generator = torch.Generator().manual_seed(case_seed(f"aten-recipe/{name}"))

    def pos(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Positive floats in [0.5, 1.5)."""
        return torch.rand(shape, generator=self.generator, dtype=dtype) + 0.5

    def signed(self, *shape: int) -> torch.Tensor:
        """Floats in [-1, 1) (grid coordinates, gradients of either sign)."""
        return torch.rand(shape, generator=self.generator) * 2 - 1

    def ints(
        self, low: int, high: int, *shape: int, dtype: torch.dtype
    ) -> torch.Tensor:
        """Integers in [low, high)."""
        return torch.randint(low, high, shape, generator=self.generator, dtype=dtype)


Recipe = Callable[[Draw], Call]
# functional overload -> (dtype naming its cases, recipe)
RECIPES: dict[str, tuple[str, Recipe]] = {}


def recipe(name: str, dtype: str = "float32") -> Callable[[Recipe], Recipe]:
    """Register the recipe of functional overload `name`."""

    def register(fn: Recipe) -> Recipe:
        RECIPES[name] = (dtype, fn)
        return fn

    return register


__all__ = ["RECIPES", "Draw", "Recipe", "recipe"]
