"""RNG overloads the distribution cases' Python calls never dispatch: the functional
forms of the in-place draws (``aten::uniform``, what functionalization and compiled
graphs call), their out= forms, ``*_like`` factories, the tensor-parameter draws
(binomial, standard gamma, Dirichlet) and rrelu's noise. Each is called explicitly
(``torch.ops.aten.<packet>.<overload>``) and judged by `rng_judges` (over
`rng_stats`) as the distribution cases are: KS distance within the DKW bound, mean within 6 standard
errors, support, same seed same draws, other seed other draws; an out= form also
returns the out it was given. Never compared with CPU's values.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts_cases.suites.base import case
from torchcts_cases.suites.rng_judges import (
    Judge,
    bernoulli_3,
    beta_23,
    binomial_judge,
    cauchy_judge,
    expected,
    exponential_2,
    gamma_2,
    geometric_judge,
    integers_judge,
    judged_all,
    log_normal_judge,
    normal_judge,
    out_of,
    random_default,
    uniform_01,
    uniform_2_3,
)
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    FLOATS,
    Verdicts,
    discrete_cdf,
    empty,
    full,
    integers_within,
    ks_continuous,
    ks_discrete,
    poisson_pmf,
    within,
)

SUITE = "rng"
A = torch.ops.aten


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
