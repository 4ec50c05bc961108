"""What the RNG distribution cases (`rng_continuous`, `rng_discrete`) judge by:
each op's draws follow the distribution it documents, stay in its support, repeat
under the same seed and change with another.

A device may use another generator than the CPU, so its draws are never compared with
the CPU's (the expected source is the property); they are judged as a sample of the
documented distribution, by these statistics:

- Kolmogorov-Smirnov distance. The Dvoretzky-Kiefer-Wolfowitz inequality (with
  Massart's constant) bounds the sup distance between the empirical CDF of `n`
  independent draws and the true CDF: ``P(D_n > eps) <= 2 exp(-2 n eps^2)``, for any
  distribution, continuous or discrete. `dkw_bound` solves it for the false-alarm
  probability `ALPHA`: with n = 20,000 and ALPHA = 1e-6, eps = 0.0190, so a correct
  generator fails one case in a million runs, while a mean off by a tenth of a
  standard deviation (D about 0.04) or a truncated tail fails every time.
- Sample mean. By the central limit theorem the mean of n draws is within
  ``Z * sd / sqrt(n)`` of the true mean but for a probability of about 2e-9
  (Z = 6); used only where the distribution has a finite variance.
- Discrete distributions are judged at the integers, where their CDF jumps, which
  bounds the same sup distance from below, so the DKW bound still applies.

Each statistic returns ``(ok, sentence)``; the sentence states the number seen and
the bound, so a failed property reads as its reason. Reproducibility is exact: the
same ``torch.manual_seed`` gives the same draws on the device, twice; another seed
gives other draws (n draws agreeing by chance is impossible for these sizes).
Every case runs in float32 and float64 (the integer-valued ops in their own dtype).
A case's repro script carries this module's source (`hand_case.CARRIED_HELPERS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchcts_cases.suites.base import all_hold, holds

FLOATS = ("float32", "float64")

ALPHA = 1e-6  # false-alarm probability of one KS check
Z = 6.0  # standard errors a sample mean may stray
DRAWS = 20_000

Cdf = Callable[[torch.Tensor], torch.Tensor]


def dkw_bound(n: int, alpha: float = ALPHA) -> float:
    """The KS distance `n` draws exceed with probability at most `alpha`."""
    return math.sqrt(math.log(2 / alpha) / (2 * n))


def ks_continuous(draws: torch.Tensor, cdf: Cdf) -> tuple[bool, str]:
    """KS distance of `draws` from a continuous `cdf`, against the DKW bound."""
    x = draws.detach().to("cpu", torch.float64).flatten().sort().values
    n = x.numel()
    f = cdf(x)
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    distance = float(torch.maximum(ranks / n - f, f - (ranks - 1) / n).max())
    return _ks_verdict(distance, n)


def ks_discrete(draws: torch.Tensor, cdf: Cdf) -> tuple[bool, str]:
    """KS distance of integer-valued `draws` from `cdf` (evaluated at the integers
    ``min .. max`` of the draws), against the DKW bound."""
    x = draws.detach().to("cpu", torch.float64).flatten()
    n = x.numel()
    points = torch.arange(float(x.min()), float(x.max()) + 1, dtype=torch.float64)
    empirical = torch.searchsorted(x.sort().values, points, right=True) / n
    distance = float((empirical - cdf(points)).abs().max())
    return _ks_verdict(distance, n)


def _ks_verdict(distance: float, n: int) -> tuple[bool, str]:
    bound = dkw_bound(n)
    return distance <= bound, (
        f"KS distance {distance:.4f} from the documented distribution exceeds "
        f"{bound:.4f}, the DKW bound for {n} draws at false-alarm probability {ALPHA:g}"
    )


def mean_near(draws: torch.Tensor, mean: float, sd: float) -> tuple[bool, str]:
    """The sample mean within Z standard errors of the true `mean`."""
    x = draws.detach().to("cpu", torch.float64).flatten()
    n = x.numel()
    seen = float(x.mean())
    allowed = Z * sd / math.sqrt(n)
    return abs(seen - mean) <= allowed, (
        f"mean of {n} draws is {seen:.5f}; expected {mean:.5f} +/- {allowed:.5f} "
        f"({Z:g} standard errors)"
    )


def normal_cdf(mean: float, sd: float) -> Cdf:
    """The CDF of N(mean, sd^2)."""
    return lambda x: 0.5 * (1 + torch.erf((x - mean) / (sd * math.sqrt(2))))


def discrete_cdf(pmf: list[float]) -> Cdf:
    """The CDF of a distribution on 0..len(pmf)-1 with these probabilities."""
    table = torch.tensor(pmf, dtype=torch.float64).cumsum(0)

    def cdf(x: torch.Tensor) -> torch.Tensor:
        index = x.long().clamp(max=len(pmf) - 1)
        return torch.where(x < 0, 0.0, table[index.clamp(min=0)])

    return cdf


def poisson_pmf(rate: float, upto: int) -> list[float]:
    """P(X = k) for k in 0..upto of Poisson(rate); the tail mass goes to `upto`."""
    pmf = [
        math.exp(-rate + k * math.log(rate) - math.lgamma(k + 1)) for k in range(upto)
    ]
    return [*pmf, 1 - sum(pmf)]


# -- judging one op's draws ---------------------------------------------------------
Draw = Callable[[str, torch.dtype], torch.Tensor]
Verdicts = dict[str, bool | str]


def judged(
    device: str,
    dtype: str | None,
    draw: Draw,
    *,
    support: Callable[[torch.Tensor], tuple[bool, str]],
    fit: Callable[[torch.Tensor], tuple[bool, str]],
    moments: tuple[float, float] | None = None,
    prefix: str = "",
) -> Verdicts:
    """Draw three times (seed A, seed A again, seed B) and judge the first draw."""
    kind = getattr(torch, dtype or "float32")

    def seeded(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        return draw(device, kind).detach().to("cpu")

    first, again, other = seeded(1234), seeded(1234), seeded(98765)
    same = first.shape == again.shape and bool(torch.equal(first, again))
    out: Verdicts = {
        "reproducible": holds(same, "two draws after manual_seed(1234) differ"),
        "seeds_differ": holds(
            not torch.equal(first, other),
            "manual_seed(1234) and manual_seed(98765) gave identical draws",
        ),
        "in_support": holds(*support(first)),
        "distribution": holds(*fit(first)),
    }
    if moments is not None:
        out["mean"] = holds(*mean_near(first, *moments))
    return {f"{prefix}{k}": v for k, v in out.items()}


def expects(
    *prefixes: str, mean: bool = True
) -> Callable[[str | None], dict[str, Any]]:
    """The expectation of a case judged by `judged` under these key prefixes."""
    keys = ["reproducible", "seeds_differ", "in_support", "distribution"]
    keys += ["mean"] if mean else []
    return all_hold(*(f"{p}{k}" for p in prefixes for k in keys))


def within(low: float, high: float) -> Callable[[torch.Tensor], tuple[bool, str]]:
    """Every draw finite and in [low, high]."""

    def check(x: torch.Tensor) -> tuple[bool, str]:
        bad = ~(torch.isfinite(x) & (x >= low) & (x <= high))
        return not bool(bad.any()), (
            f"{int(bad.sum())} of {x.numel()} draws outside [{low}, {high}] or not "
            f"finite, e.g. {x[bad][:3].tolist()}"
        )

    return check


def integers_within(
    low: float, high: float
) -> Callable[[torch.Tensor], tuple[bool, str]]:
    """Every draw an integer value in [low, high]."""
    inside = within(low, high)

    def check(x: torch.Tensor) -> tuple[bool, str]:
        ok, why = inside(x)
        fractional = int((x.double() != x.double().round()).sum())
        return ok and not fractional, f"{why}; {fractional} draws are not integers"

    return check


def empty(device: str, kind: torch.dtype) -> torch.Tensor:
    """DRAWS uninitialised elements for an in-place draw to fill."""
    return torch.empty(DRAWS, dtype=kind, device=device)


def full(value: float, device: str, kind: torch.dtype) -> torch.Tensor:
    """DRAWS copies of a parameter (a mean, a probability, a rate)."""
    return torch.full((DRAWS,), value, dtype=kind, device=device)
