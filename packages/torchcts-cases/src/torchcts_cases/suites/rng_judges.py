"""How the RNG overload cases (`rng_overloads`, `rng_generators`) judge their draws:
each documented distribution as `rng_stats.judged`'s keyword arguments (support,
fit, moments), a wrapper for out= draws that also says whether the call returned its
out, and the reviewed expectation that every property holds. A case's repro script
carries this module's source after `rng_stats`'s (`hand_case.CARRIED_HELPERS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchcts_cases.suites.base import all_hold, holds
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    Verdicts,
    discrete_cdf,
    empty,
    expects,
    integers_within,
    judged,
    ks_continuous,
    ks_discrete,
    normal_cdf,
    within,
)

Judge = dict[str, Any]  # judged()'s keyword arguments: support, fit, moments


def out_of(fn: Callable[..., torch.Tensor]) -> Callable[[str, torch.dtype], Any]:
    """An out= draw: ``fn(d, k, out=...)`` into a fresh uninitialised out, returning
    the out together with whether the call returned that very tensor."""

    def draw(d: str, k: torch.dtype) -> tuple[torch.Tensor, bool]:
        out = empty(d, k)
        return out, fn(d, k, out=out) is out

    return draw


def judged_all(
    device: str, dtype: str | None, draws: dict[str, tuple[Any, Judge]]
) -> Verdicts:
    """`judged` for each named draw; an out= draw (`out_of`) also says whether it
    returned its out (``<name>.returns_out``)."""
    verdicts: Verdicts = {}
    for name, (draw, judge) in draws.items():
        returned: list[bool] = []

        def values(
            d: str, k: torch.dtype, draw: Any = draw, returned: list[bool] = returned
        ) -> Any:
            got = draw(d, k)
            if isinstance(got, tuple):
                returned.append(got[1])
                return got[0]
            return got

        verdicts |= judged(device, dtype, values, prefix=f"{name}.", **judge)
        if returned:
            verdicts[f"{name}.returns_out"] = holds(
                all(returned), "the out= call did not return the out it was given"
            )
    return verdicts


def expected(
    names: dict[str, bool], outs: tuple[str, ...] = ()
) -> Callable[[str | None], dict[str, Any]]:
    """The reviewed expectation: every property of each draw holds (the mean only
    where `names` says the distribution has one), and each out= draw returns out."""

    def expectation(dtype: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, mean in names.items():
            out |= expects(f"{name}.", mean=mean)(dtype)
        return out | all_hold(*(f"{n}.returns_out" for n in outs))(dtype)

    return expectation


# -- the documented distributions, as judged() keyword arguments ----------------------
def uniform_2_3() -> Judge:
    """U[-2, 3)."""
    return {
        "support": within(-2, 3),
        "fit": lambda x: ks_continuous(x, lambda t: ((t + 2) / 5).clamp(0, 1)),
        "moments": (0.5, 5 / math.sqrt(12)),
    }


def normal_judge(mean: float, sd: float) -> Judge:
    """N(mean, sd^2)."""
    return {
        "support": within(-math.inf, math.inf),
        "fit": lambda x: ks_continuous(x, normal_cdf(mean, sd)),
        "moments": (mean, sd),
    }


def exponential_2() -> Judge:
    """Exp(2): mean 1/2."""
    return {
        "support": within(0, math.inf),
        "fit": lambda x: ks_continuous(x, lambda t: 1 - torch.exp(-2 * t.clamp(min=0))),
        "moments": (0.5, 0.5),
    }


def cauchy_judge() -> Judge:
    """Cauchy(0.5, 2): no moments, the KS distance judges."""
    return {
        "support": within(-math.inf, math.inf),
        "fit": lambda x: ks_continuous(
            x, lambda t: 0.5 + torch.atan((t - 0.5) / 2) / math.pi
        ),
    }


def log_normal_judge() -> Judge:
    """exp(N(0.25, 0.5^2))."""
    mean = math.exp(0.25 + 0.5**2 / 2)
    sd = math.sqrt((math.exp(0.5**2) - 1) * math.exp(2 * 0.25 + 0.5**2))
    return {
        "support": within(0, math.inf),
        "fit": lambda x: ks_continuous(x, lambda t: normal_cdf(0.25, 0.5)(t.log())),
        "moments": (mean, sd),
    }


def geometric_judge() -> Judge:
    """Geometric(0.3) on 1, 2, ...: mean 1/p."""
    return {
        "support": integers_within(1, math.inf),
        "fit": lambda x: ks_discrete(x, lambda t: 1 - 0.7 ** t.floor().clamp(min=0)),
        "moments": (1 / 0.3, math.sqrt(0.7) / 0.3),
    }


def integers_judge(low: int, high: int) -> Judge:
    """Integers uniform on [low, high)."""
    n = high - low
    return {
        "support": integers_within(low, high - 1),
        "fit": lambda x: ks_discrete(x - low, discrete_cdf([1 / n] * n)),
        "moments": (low + (n - 1) / 2, math.sqrt((n * n - 1) / 12)),
    }


def random_default(dtype: str | None) -> Judge:
    """random() on a float: integers uniform on [0, 2**digits], digits the
    mantissa's (24 or 53), judged as continuous at that scale."""
    top = 2.0 / torch.finfo(getattr(torch, dtype or "float32")).eps
    return {
        "support": integers_within(0, top),
        "fit": lambda x: ks_continuous(x, lambda t: (t / top).clamp(0, 1)),
        "moments": (top / 2, top / math.sqrt(12)),
    }


def bernoulli_3() -> Judge:
    """1 with probability 0.3, else 0."""
    return {
        "support": integers_within(0, 1),
        "fit": lambda x: ks_discrete(x, discrete_cdf([0.7, 0.3])),
        "moments": (0.3, math.sqrt(0.21)),
    }


def uniform_01() -> Judge:
    """U[0, 1)."""
    return {
        "support": within(0, 1),
        "fit": lambda x: ks_continuous(x, lambda t: t.clamp(0, 1)),
        "moments": (0.5, math.sqrt(1 / 12)),
    }


def gamma_2(x: torch.Tensor) -> torch.Tensor:
    """The CDF of Gamma(2, 1)."""
    cdf: torch.Tensor = torch.special.gammainc(torch.full_like(x, 2.0), x.clamp(min=0))
    return cdf


def binomial_judge() -> Judge:
    """Binomial(10, 0.3)."""
    pmf = [math.comb(10, j) * 0.3**j * 0.7 ** (10 - j) for j in range(11)]
    return {
        "support": integers_within(0, 10),
        "fit": lambda x: ks_discrete(x, discrete_cdf(pmf)),
        "moments": (3.0, math.sqrt(2.1)),
    }


def beta_23() -> Judge:
    """Beta(2, 3): F(x) = P(Binomial(4, x) >= 2), mean 0.4, sd 0.2."""
    return {
        "support": within(0, 1),
        "fit": lambda x: ks_continuous(
            x, lambda t: 1 - (1 - t) ** 4 - 4 * t * (1 - t) ** 3
        ),
        "moments": (0.4, 0.2),
    }


def randperm_judge() -> Judge:
    """A permutation of 0..n-1 whose first tenth is a uniform sample."""

    def permutation(x: torch.Tensor) -> tuple[bool, str]:
        ok = bool(torch.equal(x.sort().values, torch.arange(x.numel(), dtype=x.dtype)))
        return ok, f"randperm({x.numel()}) is not a permutation of 0..{x.numel() - 1}"

    return {
        "support": permutation,
        "fit": lambda x: ks_discrete(
            x[: DRAWS // 10], discrete_cdf([1 / DRAWS] * DRAWS)
        ),
    }


def rrelu_judge() -> Judge:
    """The slope of a negative input in training: U[1/8, 1/3]."""
    low, high = 0.125, 1 / 3
    return {
        "support": lambda x: (
            bool(((x >= low) & (x <= high)).all()),
            f"slopes outside [{low}, {high:.4f}]: {x[(x < low) | (x > high)][:3]}",
        ),
        "fit": lambda x: ks_continuous(
            x, lambda t: ((t - low) / (high - low)).clamp(0, 1)
        ),
        "moments": ((low + high) / 2, (high - low) / math.sqrt(12)),
    }
