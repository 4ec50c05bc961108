"""RNG distributions with a density: normal (in-place and functional), rand,
randn, uniform, exponential, log-normal and Cauchy draws on the device, judged by
`rng_stats` (KS distance within the DKW bound, mean within 6 standard errors, support,
same seed same draws, other seed other draws). Never compared with CPU's values.
"""

from __future__ import annotations

import math

import torch

from torchcts_cases.suites.base import case
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    FLOATS,
    Draw,
    Verdicts,
    empty,
    expects,
    full,
    judged,
    ks_continuous,
    normal_cdf,
    within,
)

SUITE = "rng"


@case(
    SUITE,
    "normal_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::normal_",),
)
def normal_distribution(device: str, dtype: str | None) -> Verdicts:
    """normal_(1.5, 0.5) draws follow N(1.5, 0.25)."""
    return judged(
        device,
        dtype,
        lambda dev, k: empty(dev, k).normal_(1.5, 0.5),
        support=within(-math.inf, math.inf),
        fit=lambda x: ks_continuous(x, normal_cdf(1.5, 0.5)),
        moments=(1.5, 0.5),
    )


@case(
    SUITE,
    "normal_overloads",
    2,
    dtypes=FLOATS,
    expected=expects("tensor_tensor.", "tensor_float.", "float_float."),
    surfaces=(
        "aten::normal.Tensor_Tensor",
        "aten::normal.Tensor_float",
        "aten::normal.float_float",
    ),
)
def normal_overloads(device: str, dtype: str | None) -> Verdicts:
    """torch.normal with tensor or float mean and std draws N(-1, 4) in each form."""
    draws: dict[str, Draw] = {
        "tensor_tensor.": lambda d, k: torch.normal(full(-1, d, k), full(2, d, k)),
        "tensor_float.": lambda d, k: torch.normal(full(-1, d, k), 2.0),
        "float_float.": lambda d, k: torch.normal(
            -1.0, 2.0, (DRAWS,), dtype=k, device=d
        ),
    }
    out: Verdicts = {}
    for prefix, draw in draws.items():
        out |= judged(
            device,
            dtype,
            draw,
            support=within(-math.inf, math.inf),
            fit=lambda x: ks_continuous(x, normal_cdf(-1, 2)),
            moments=(-1.0, 2.0),
            prefix=prefix,
        )
    return out


@case(
    SUITE,
    "rand_randn_distribution",
    2,
    dtypes=FLOATS,
    expected=expects("rand.", "randn."),
    surfaces=("aten::rand", "aten::randn"),
)
def rand_randn_distribution(device: str, dtype: str | None) -> Verdicts:
    """rand draws U[0, 1); randn draws N(0, 1)."""
    rand = judged(
        device,
        dtype,
        lambda d, k: torch.rand(DRAWS, dtype=k, device=d),
        support=within(0, 1),
        fit=lambda x: ks_continuous(x, lambda t: t),
        moments=(0.5, math.sqrt(1 / 12)),
        prefix="rand.",
    )
    randn = judged(
        device,
        dtype,
        lambda d, k: torch.randn(DRAWS, dtype=k, device=d),
        support=within(-math.inf, math.inf),
        fit=lambda x: ks_continuous(x, normal_cdf(0, 1)),
        moments=(0.0, 1.0),
        prefix="randn.",
    )
    return rand | randn


@case(
    SUITE,
    "uniform_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::uniform_",),
)
def uniform_distribution(device: str, dtype: str | None) -> Verdicts:
    """uniform_(-2, 3) draws U[-2, 3)."""
    return judged(
        device,
        dtype,
        lambda d, k: empty(d, k).uniform_(-2, 3),
        support=within(-2, 3),
        fit=lambda x: ks_continuous(x, lambda t: ((t + 2) / 5).clamp(0, 1)),
        moments=(0.5, 5 / math.sqrt(12)),
    )


@case(
    SUITE,
    "exponential_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::exponential_",),
)
def exponential_distribution(device: str, dtype: str | None) -> Verdicts:
    """exponential_(lambd=2) draws Exp(2): mean 1/2."""
    return judged(
        device,
        dtype,
        lambda d, k: empty(d, k).exponential_(2.0),
        support=within(0, math.inf),
        fit=lambda x: ks_continuous(x, lambda t: 1 - torch.exp(-2 * t.clamp(min=0))),
        moments=(0.5, 0.5),
    )


@case(
    SUITE,
    "log_normal_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::log_normal_",),
)
def log_normal_distribution(device: str, dtype: str | None) -> Verdicts:
    """log_normal_(0.25, 0.5) draws exp(N(0.25, 0.25))."""
    mean = math.exp(0.25 + 0.5**2 / 2)
    sd = math.sqrt((math.exp(0.5**2) - 1) * math.exp(2 * 0.25 + 0.5**2))
    return judged(
        device,
        dtype,
        lambda d, k: empty(d, k).log_normal_(0.25, 0.5),
        support=within(0, math.inf),
        fit=lambda x: ks_continuous(x, lambda t: normal_cdf(0.25, 0.5)(t.log())),
        moments=(mean, sd),
    )


@case(
    SUITE,
    "cauchy_distribution",
    2,
    dtypes=FLOATS,
    expected=expects("", mean=False),
    surfaces=("aten::cauchy_",),
)
def cauchy_distribution(device: str, dtype: str | None) -> Verdicts:
    """cauchy_(0.5, 2) draws Cauchy(0.5, 2) (no moments: the KS distance judges)."""
    return judged(
        device,
        dtype,
        lambda d, k: empty(d, k).cauchy_(0.5, 2.0),
        support=within(-math.inf, math.inf),
        fit=lambda x: ks_continuous(
            x, lambda t: 0.5 + torch.atan((t - 0.5) / 2) / math.pi
        ),
    )


CASES = (
    normal_distribution,
    normal_overloads,
    rand_randn_distribution,
    uniform_distribution,
    exponential_distribution,
    log_normal_distribution,
    cauchy_distribution,
)
