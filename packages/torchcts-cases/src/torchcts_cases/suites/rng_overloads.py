"""RNG overloads the distribution cases' Python calls never dispatch: the functional
forms of the in-place draws (``aten::uniform``, what functionalization and compiled
graphs call), their out= forms, ``*_like`` factories, the tensor-parameter draws
(binomial, standard gamma, Dirichlet) and rrelu's noise. Each is called explicitly
(``torch.ops.aten.<packet>.<overload>``) and judged by `rng_stats` as the
distribution cases are: KS distance within the DKW bound, mean within 6 standard
errors, support, same seed same draws, other seed other draws; an out= form also
returns the out it was given. Never compared with CPU's values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchcts_cases.suites.base import all_hold, case, holds
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    FLOATS,
    Verdicts,
    discrete_cdf,
    empty,
    expects,
    full,
    integers_within,
    judged,
    ks_continuous,
    ks_discrete,
    normal_cdf,
    poisson_pmf,
    within,
)

SUITE = "rng"
A = torch.ops.aten
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


@case(
    SUITE,
    "functional_draws",
    3,
    dtypes=FLOATS,
    expected=expected(
        {
            **dict.fromkeys(
                ["uniform", "exponential", "log_normal", "geometric"], True
            ),
            **{"cauchy": False, "normal_functional": True, "random": True},
            **{"random.from": True, "random.to": True},
        }
    ),
    surfaces=(
        *("aten::uniform", "aten::exponential", "aten::cauchy", "aten::log_normal"),
        *("aten::geometric", "aten::normal_functional", "aten::random"),
        *("aten::random.from", "aten::random.to"),
    ),
)
def functional_draws(device: str, dtype: str | None) -> Verdicts:
    """The functional forms of the in-place draws (``uniform`` for ``uniform_``)
    draw from the same distributions, leaving their input alone."""
    like = empty
    return judged_all(
        device,
        dtype,
        {
            "uniform": (lambda d, k: A.uniform(like(d, k), -2.0, 3.0), uniform_2_3()),
            "exponential": (
                lambda d, k: A.exponential(like(d, k), 2.0),
                exponential_2(),
            ),
            "cauchy": (lambda d, k: A.cauchy(like(d, k), 0.5, 2.0), cauchy_judge()),
            "log_normal": (
                lambda d, k: A.log_normal(like(d, k), 0.25, 0.5),
                log_normal_judge(),
            ),
            "geometric": (lambda d, k: A.geometric(like(d, k), 0.3), geometric_judge()),
            "normal_functional": (
                lambda d, k: A.normal_functional(like(d, k), 1.5, 0.5),
                normal_judge(1.5, 0.5),
            ),
            "random": (lambda d, k: A.random(like(d, k)), random_default(dtype)),
            "random.from": (
                lambda d, k: getattr(A.random, "from")(like(d, k), 3, 13),
                integers_judge(3, 13),
            ),
            "random.to": (
                lambda d, k: A.random.to(like(d, k), 10),
                integers_judge(0, 10),
            ),
        },
    )


OUT_DRAWS = (
    *("uniform", "exponential", "cauchy", "log_normal", "geometric", "normal"),
    *("random", "random.from", "random.to", "bernoulli.float", "bernoulli.Tensor"),
    *("normal.float_Tensor", "normal.float_float", "rand", "rand_like", "randn_like"),
)


@case(
    SUITE,
    "out_draws",
    3,
    dtypes=FLOATS,
    expected=expected({n: n != "cauchy" for n in OUT_DRAWS}, OUT_DRAWS),
    surfaces=(
        *("aten::uniform.out", "aten::exponential.out", "aten::cauchy.out"),
        *("aten::log_normal.out", "aten::geometric.out", "aten::normal.out"),
        *("aten::random.out", "aten::random.from_out", "aten::random.to_out"),
        *("aten::bernoulli.float_out", "aten::bernoulli.Tensor_out"),
        *("aten::normal.float_Tensor_out", "aten::normal.float_float_out"),
        *("aten::rand.out", "aten::rand_like.out", "aten::randn_like.out"),
    ),
)
def out_draws(device: str, dtype: str | None) -> Verdicts:
    """The out= forms draw from the same distributions into the out they are
    given, and return it."""
    x = empty
    draws: dict[str, tuple[Any, Judge]] = {
        "uniform": (A.uniform.out, uniform_2_3()),
        "exponential": (A.exponential.out, exponential_2()),
        "cauchy": (A.cauchy.out, cauchy_judge()),
        "log_normal": (A.log_normal.out, log_normal_judge()),
        "geometric": (A.geometric.out, geometric_judge()),
        "normal": (A.normal.out, normal_judge(1.5, 0.5)),
    }
    arguments = {
        "uniform": (-2.0, 3.0),
        "exponential": (2.0,),
        "cauchy": (0.5, 2.0),
        "log_normal": (0.25, 0.5),
        "geometric": (0.3,),
        "normal": (1.5, 0.5),
    }
    made: dict[str, tuple[Any, Judge]] = {
        name: (
            out_of(
                lambda d, k, out, fn=fn, a=arguments[name]: fn(x(d, k), *a, out=out)
            ),
            judge,
        )
        for name, (fn, judge) in draws.items()
    }
    made |= {
        "random": (
            out_of(lambda d, k, out: A.random.out(x(d, k), out=out)),
            random_default(dtype),
        ),
        "random.from": (
            out_of(lambda d, k, out: A.random.from_out(x(d, k), 3, 13, out=out)),
            integers_judge(3, 13),
        ),
        "random.to": (
            out_of(lambda d, k, out: A.random.to_out(x(d, k), 10, out=out)),
            integers_judge(0, 10),
        ),
        "bernoulli.float": (
            out_of(lambda d, k, out: A.bernoulli.float_out(x(d, k), 0.3, out=out)),
            bernoulli_3(),
        ),
        "bernoulli.Tensor": (
            out_of(
                lambda d, k, out: A.bernoulli.Tensor_out(
                    x(d, k), full(0.3, d, k), out=out
                )
            ),
            bernoulli_3(),
        ),
        "normal.float_Tensor": (
            out_of(
                lambda d, k, out: A.normal.float_Tensor_out(
                    -1.0, full(2, d, k), out=out
                )
            ),
            normal_judge(-1.0, 2.0),
        ),
        "normal.float_float": (
            out_of(
                lambda d, k, out: A.normal.float_float_out(-1.0, 2.0, [DRAWS], out=out)
            ),
            normal_judge(-1.0, 2.0),
        ),
        "rand": (out_of(lambda d, k, out: A.rand.out([DRAWS], out=out)), uniform_01()),
        "rand_like": (
            out_of(lambda d, k, out: A.rand_like.out(x(d, k), out=out)),
            uniform_01(),
        ),
        "randn_like": (
            out_of(lambda d, k, out: A.randn_like.out(x(d, k), out=out)),
            normal_judge(0.0, 1.0),
        ),
    }
    return judged_all(device, dtype, made)


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


def dirichlet_first(d: str, k: torch.dtype, out: torch.Tensor | None = None) -> Any:
    """The first component of Dirichlet(2, 3) draws, Beta(2, 3) distributed (rows
    that do not sum to one are made NaN, which the support check then rejects)."""
    alpha = torch.tensor([2.0, 3.0], dtype=k, device=d).expand(DRAWS, 2).contiguous()
    if out is None:
        rows = A._sample_dirichlet(alpha)
        returned = True
    else:
        returned = A._sample_dirichlet.out(alpha, out=out) is out
        rows = out
    host = rows.to("cpu", torch.float64)
    valid = (host.sum(1) - 1).abs() <= 1e-3
    first = torch.where(valid, host[:, 0], torch.nan)
    return (first, returned) if out is not None else first


def beta_23() -> Judge:
    """Beta(2, 3): F(x) = P(Binomial(4, x) >= 2), mean 0.4, sd 0.2."""
    return {
        "support": within(0, 1),
        "fit": lambda x: ks_continuous(
            x, lambda t: 1 - (1 - t) ** 4 - 4 * t * (1 - t) ** 3
        ),
        "moments": (0.4, 0.2),
    }


PARAMETER_DRAWS = (
    *("bernoulli", "normal.float_Tensor", "binomial", "binomial.out"),
    *("standard_gamma", "standard_gamma.out", "poisson.out", "dirichlet"),
    *("dirichlet.out", "rand_like"),
)
PARAMETER_OUTS = ("binomial.out", "standard_gamma.out", "poisson.out", "dirichlet.out")


@case(
    SUITE,
    "tensor_parameter_draws",
    3,
    dtypes=FLOATS,
    expected=expected(dict.fromkeys(PARAMETER_DRAWS, True), PARAMETER_OUTS),
    surfaces=(
        *("aten::bernoulli.Tensor", "aten::normal.float_Tensor", "aten::binomial"),
        *("aten::binomial.out", "aten::_standard_gamma", "aten::_standard_gamma.out"),
        *("aten::poisson.out", "aten::_sample_dirichlet"),
        *("aten::_sample_dirichlet.out", "aten::rand_like"),
    ),
)
def tensor_parameter_draws(device: str, dtype: str | None) -> Verdicts:
    """Draws whose parameters are tensors: bernoulli(self, p), normal(float, std),
    binomial(count, prob), standard gamma, Poisson, Dirichlet, rand_like."""
    x = empty
    return judged_all(
        device,
        dtype,
        {
            "bernoulli": (
                lambda d, k: A.bernoulli.Tensor(x(d, k), full(0.3, d, k)),
                bernoulli_3(),
            ),
            "normal.float_Tensor": (
                lambda d, k: A.normal.float_Tensor(-1.0, full(2, d, k)),
                normal_judge(-1.0, 2.0),
            ),
            "binomial": (
                lambda d, k: A.binomial(full(10, d, k), full(0.3, d, k)),
                binomial_judge(),
            ),
            "binomial.out": (
                out_of(
                    lambda d, k, out: A.binomial.out(
                        full(10, d, k), full(0.3, d, k), out=out
                    )
                ),
                binomial_judge(),
            ),
            "standard_gamma": (
                lambda d, k: A._standard_gamma(full(2, d, k)),
                {
                    "support": within(0, math.inf),
                    "fit": lambda t: ks_continuous(t, gamma_2),
                    "moments": (2.0, math.sqrt(2)),
                },
            ),
            "standard_gamma.out": (
                out_of(lambda d, k, out: A._standard_gamma.out(full(2, d, k), out=out)),
                {
                    "support": within(0, math.inf),
                    "fit": lambda t: ks_continuous(t, gamma_2),
                    "moments": (2.0, math.sqrt(2)),
                },
            ),
            "poisson.out": (
                out_of(lambda d, k, out: A.poisson.out(full(4.0, d, k), out=out)),
                {
                    "support": integers_within(0, math.inf),
                    "fit": lambda t: ks_discrete(t, discrete_cdf(poisson_pmf(4.0, 60))),
                    "moments": (4.0, 2.0),
                },
            ),
            "dirichlet": (lambda d, k: dirichlet_first(d, k), beta_23()),
            "dirichlet.out": (
                lambda d, k: dirichlet_first(
                    d, k, torch.empty(DRAWS, 2, dtype=k, device=d)
                ),
                beta_23(),
            ),
            "rand_like": (lambda d, k: A.rand_like(x(d, k)), uniform_01()),
        },
    )


CASES = (functional_draws, out_draws, tensor_parameter_draws)
