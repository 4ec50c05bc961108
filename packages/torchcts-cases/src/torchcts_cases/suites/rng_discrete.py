"""Integer-valued RNG ops: geometric, bernoulli (four overloads), random_, randint,
randperm, multinomial and poisson draws on the device, judged by `rng_stats` at the
integers where their CDF jumps (KS distance within the DKW bound, mean within 6
standard errors, support, same seed same draws, other seed other draws). Never
compared with CPU's values.
"""

from __future__ import annotations

import math

import torch

from torchcts_cases.suites.base import all_hold, case, holds
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    FLOATS,
    Draw,
    Verdicts,
    discrete_cdf,
    empty,
    expects,
    full,
    integers_within,
    judged,
    ks_continuous,
    ks_discrete,
    poisson_pmf,
)

SUITE = "rng"


@case(
    SUITE,
    "geometric_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::geometric_",),
)
def geometric_distribution(device: str, dtype: str | None) -> Verdicts:
    """geometric_(0.3) draws the trial of the first success: 1, 2, ...; mean 1/p."""
    return judged(
        device,
        dtype,
        lambda d, k: empty(d, k).geometric_(0.3),
        support=integers_within(1, math.inf),
        fit=lambda x: ks_discrete(x, lambda t: 1 - 0.7 ** t.floor().clamp(min=0)),
        moments=(1 / 0.3, math.sqrt(0.7) / 0.3),
    )


@case(
    SUITE,
    "bernoulli_distribution",
    2,
    dtypes=FLOATS,
    expected=expects("float_.", "tensor_.", "tensor.", "p."),
    surfaces=(
        "aten::bernoulli_.float",
        "aten::bernoulli_.Tensor",
        "aten::bernoulli",
        "aten::bernoulli.p",
    ),
)
def bernoulli_distribution(device: str, dtype: str | None) -> Verdicts:
    """bernoulli_ (float or tensor p) and bernoulli (p in the tensor, or p=) give 1
    with probability 0.3, else 0."""
    draws: dict[str, Draw] = {
        "float_.": lambda d, k: empty(d, k).bernoulli_(0.3),
        "tensor_.": lambda d, k: empty(d, k).bernoulli_(full(0.3, d, k)),
        "tensor.": lambda d, k: torch.bernoulli(full(0.3, d, k)),
        "p.": lambda d, k: torch.bernoulli(empty(d, k), 0.3),
    }
    out: Verdicts = {}
    for prefix, draw in draws.items():
        out |= judged(
            device,
            dtype,
            draw,
            support=integers_within(0, 1),
            fit=lambda x: ks_discrete(x, discrete_cdf([0.7, 0.3])),
            moments=(0.3, math.sqrt(0.21)),
            prefix=prefix,
        )
    return out


@case(
    SUITE,
    "random_distribution",
    2,
    dtypes=FLOATS,
    expected=expects("from.", "to.", "default."),
    surfaces=("aten::random_.from", "aten::random_.to", "aten::random_"),
)
def random_distribution(device: str, dtype: str | None) -> Verdicts:
    """random_(3, 13) and random_(10) draw integers uniformly from [from, to);
    random_() from [0, 2**digits], digits the float's mantissa (24 or 53)."""
    top = 2.0 / torch.finfo(getattr(torch, dtype or "float32")).eps  # 2**digits
    ten = discrete_cdf([0.1] * 10)
    out = judged(
        device,
        dtype,
        lambda d, k: empty(d, k).random_(3, 13),
        support=integers_within(3, 12),
        fit=lambda x: ks_discrete(x - 3, ten),
        moments=(7.5, math.sqrt(99 / 12)),
        prefix="from.",
    )
    out |= judged(
        device,
        dtype,
        lambda d, k: empty(d, k).random_(10),
        support=integers_within(0, 9),
        fit=lambda x: ks_discrete(x, ten),
        moments=(4.5, math.sqrt(99 / 12)),
        prefix="to.",
    )
    out |= judged(
        device,
        dtype,
        lambda d, k: empty(d, k).random_(),
        support=integers_within(0, top),
        fit=lambda x: ks_continuous(x, lambda t: (t / top).clamp(0, 1)),
        moments=(top / 2, top / math.sqrt(12)),
        prefix="default.",
    )
    return out


@case(
    SUITE,
    "randint_distribution",
    2,
    dtypes=("int64",),
    expected=expects("low.", "high."),
    surfaces=("aten::randint.low", "aten::randint"),
)
def randint_distribution(device: str, dtype: str | None) -> Verdicts:
    """randint(3, 13) and randint(10) draw integers uniformly from [low, high)."""
    ten = discrete_cdf([0.1] * 10)
    low = judged(
        device,
        dtype,
        lambda d, k: torch.randint(3, 13, (DRAWS,), device=d),
        support=integers_within(3, 12),
        fit=lambda x: ks_discrete(x - 3, ten),
        moments=(7.5, math.sqrt(99 / 12)),
        prefix="low.",
    )
    high = judged(
        device,
        dtype,
        lambda d, k: torch.randint(10, (DRAWS,), device=d),
        support=integers_within(0, 9),
        fit=lambda x: ks_discrete(x, ten),
        moments=(4.5, math.sqrt(99 / 12)),
        prefix="high.",
    )
    return low | high


def _permutation(x: torch.Tensor) -> tuple[bool, str]:
    ok = bool(torch.equal(x.sort().values, torch.arange(x.numel(), dtype=x.dtype)))
    return ok, f"randperm({x.numel()}) is not a permutation of 0..{x.numel() - 1}"


@case(
    SUITE,
    "randperm_distribution",
    2,
    dtypes=("int64",),
    expected=expects("", mean=False),
    surfaces=("aten::randperm",),
)
def randperm_distribution(device: str, dtype: str | None) -> Verdicts:
    """randperm(n) is a permutation whose first tenth is a uniform sample of 0..n-1
    (drawn without replacement, which concentrates more than the DKW bound needs)."""
    return judged(
        device,
        dtype,
        lambda d, k: torch.randperm(DRAWS, device=d),
        support=_permutation,
        fit=lambda x: ks_discrete(x[: DRAWS // 10], discrete_cdf([1 / DRAWS] * DRAWS)),
    )


PROBS = [0.1, 0.2, 0.3, 0.4]


def _distinct_nonzero(x: torch.Tensor) -> tuple[bool, str]:
    rows = [row.tolist() for row in x]
    ok = all(len(set(r)) == len(r) and 0 not in r for r in rows)
    return ok, f"draws without replacement repeat a category or pick p=0: {rows[:2]}"


@case(
    SUITE,
    "multinomial_distribution",
    2,
    dtypes=FLOATS,
    expected=lambda dtype: {
        **expects("replacement.")(dtype),
        **all_hold("no_replacement.valid", "no_replacement.reproducible")(dtype),
    },
    surfaces=("aten::multinomial",),
)
def multinomial_distribution(device: str, dtype: str | None) -> Verdicts:
    """multinomial with replacement picks category i with probability PROBS[i];
    without replacement it never repeats a category nor picks one of weight 0."""

    def with_replacement(d: str, k: torch.dtype) -> torch.Tensor:
        return torch.multinomial(torch.tensor(PROBS, dtype=k, device=d), DRAWS, True)

    def without(d: str, k: torch.dtype) -> torch.Tensor:
        weights = torch.tensor([0.0, *([1.0] * 9)], dtype=k, device=d).expand(64, 10)
        return torch.multinomial(weights, 9, replacement=False)

    mean = sum(i * p for i, p in enumerate(PROBS))
    sd = math.sqrt(sum((i - mean) ** 2 * p for i, p in enumerate(PROBS)))
    out = judged(
        device,
        dtype,
        with_replacement,
        support=integers_within(0, 3),
        fit=lambda x: ks_discrete(x, discrete_cdf(PROBS)),
        moments=(mean, sd),
        prefix="replacement.",
    )
    kind = getattr(torch, dtype or "float32")
    torch.manual_seed(5)
    first = without(device, kind).to("cpu")
    torch.manual_seed(5)
    again = without(device, kind).to("cpu")
    out["no_replacement.valid"] = holds(*_distinct_nonzero(first))
    out["no_replacement.reproducible"] = holds(
        bool(torch.equal(first, again)), "two draws after manual_seed(5) differ"
    )
    return out


@case(
    SUITE,
    "poisson_distribution",
    2,
    dtypes=FLOATS,
    expected=expects(""),
    surfaces=("aten::poisson",),
)
def poisson_distribution(device: str, dtype: str | None) -> Verdicts:
    """poisson(rates of 4) draws Poisson(4): integers >= 0, mean 4, variance 4."""
    return judged(
        device,
        dtype,
        lambda d, k: torch.poisson(full(4.0, d, k)),
        support=integers_within(0, math.inf),
        fit=lambda x: ks_discrete(x, discrete_cdf(poisson_pmf(4.0, 60))),
        moments=(4.0, 2.0),
    )


CASES = (
    geometric_distribution,
    bernoulli_distribution,
    random_distribution,
    randint_distribution,
    randperm_distribution,
    multinomial_distribution,
    poisson_distribution,
)
