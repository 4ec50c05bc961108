"""Integer-valued RNG overloads in out= and ``*_like`` forms, the overloads that take
an explicit ``torch.Generator`` (the ``.generator`` forms the Python functions
reach only when one is passed), and rrelu's random slopes in training. Judged by
`rng_judges` as `rng_overloads` is; a generator draw is reproduced by seeding a
fresh device generator with the same seed, not the global one. Never compared with
CPU's values.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import all_hold, case, holds
from torchcts_cases.suites.rng_judges import (
    Judge,
    expected,
    integers_judge,
    judged_all,
    normal_judge,
    out_of,
    randperm_judge,
    rrelu_judge,
    uniform_01,
)
from torchcts_cases.suites.rng_stats import (
    DRAWS,
    FLOATS,
    Verdicts,
    empty,
    full,
)

SUITE = "rng"
A = torch.ops.aten
SIZE = [DRAWS]

INTEGER_DRAWS = (
    *("randint", "randint.low", "randint_like", "randint_like.low"),
    *("randint_like.Tensor", "randint_like.Tensor_out", "randperm"),
)
INTEGER_OUTS = (
    *("randint", "randint.low", "randint_like", "randint_like.low"),
    *("randint_like.Tensor_out", "randperm"),
)


def _ints(d: str) -> torch.Tensor:
    """DRAWS uninitialised int64 elements (the template of a *_like draw)."""
    return torch.empty(DRAWS, dtype=torch.int64, device=d)


def _high(value: int = 10) -> torch.Tensor:
    """randint_like.Tensor's bound: a 0-dim int64 tensor on the CPU, whatever the
    device ("high must be a scalar tensor and on CPU", PyTorch's own check)."""
    return torch.tensor(value)


@case(
    SUITE,
    "integer_out_draws",
    3,
    dtypes=("int64",),
    expected=expected({n: n != "randperm" for n in INTEGER_DRAWS}, INTEGER_OUTS),
    surfaces=(
        *("aten::randint.out", "aten::randint.low_out", "aten::randint_like.out"),
        *("aten::randint_like.low_dtype_out", "aten::randint_like.Tensor"),
        *("aten::randint_like.Tensor_out", "aten::randperm.out"),
    ),
)
def integer_out_draws(device: str, dtype: str | None) -> Verdicts:
    """randint, randint_like and randperm in their out= and tensor-bound forms
    draw uniform integers from [low, high) (a permutation, for randperm)."""
    return judged_all(
        device,
        dtype,
        {
            "randint": (
                out_of(lambda d, k, out: A.randint.out(10, SIZE, out=out)),
                integers_judge(0, 10),
            ),
            "randint.low": (
                out_of(lambda d, k, out: A.randint.low_out(3, 13, SIZE, out=out)),
                integers_judge(3, 13),
            ),
            "randint_like": (
                out_of(lambda d, k, out: A.randint_like.out(_ints(d), 10, out=out)),
                integers_judge(0, 10),
            ),
            "randint_like.low": (
                out_of(
                    lambda d, k, out: A.randint_like.low_dtype_out(
                        _ints(d), 3, 13, out=out
                    )
                ),
                integers_judge(3, 13),
            ),
            "randint_like.Tensor": (
                lambda d, k: A.randint_like.Tensor(_ints(d), _high()),
                integers_judge(0, 10),
            ),
            "randint_like.Tensor_out": (
                out_of(
                    lambda d, k, out: A.randint_like.Tensor_out(
                        _ints(d), _high(), out=out
                    )
                ),
                integers_judge(0, 10),
            ),
            "randperm": (
                out_of(lambda d, k, out: A.randperm.out(DRAWS, out=out)),
                randperm_judge(),
            ),
        },
    )


def generator(device: str) -> torch.Generator:
    """A fresh generator of the device seeded as the global one was last seeded
    (`judged` seeds the global generator before each draw)."""
    return torch.Generator(device=device).manual_seed(torch.initial_seed())


GENERATOR_FLOAT_DRAWS = ("rand_like", "rand_like.out", "randn_like", "randn_like.out")
GENERATOR_INT_DRAWS = (
    *("randint", "randint.out", "randint.low_out", "randint_like"),
    *("randint_like.out", "randint_like.low", "randint_like.low_out"),
    *("randint_like.Tensor", "randint_like.Tensor_out", "randperm.out"),
)


def _outs(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n for n in names if n.endswith("out"))


@case(
    SUITE,
    "generator_float_draws",
    3,
    dtypes=FLOATS,
    capability="device_generator",
    expected=expected(
        dict.fromkeys(GENERATOR_FLOAT_DRAWS, True), _outs(GENERATOR_FLOAT_DRAWS)
    ),
    surfaces=(
        *("aten::rand_like.generator", "aten::rand_like.generator_out"),
        *("aten::randn_like.generator", "aten::randn_like.generator_out"),
    ),
)
def generator_float_draws(device: str, dtype: str | None) -> Verdicts:
    """rand_like and randn_like with an explicit device generator: the same
    generator seed gives the same draws, another seed others."""
    g = generator
    return judged_all(
        device,
        dtype,
        {
            "rand_like": (
                lambda d, k: A.rand_like.generator(empty(d, k), generator=g(d)),
                uniform_01(),
            ),
            "rand_like.out": (
                out_of(
                    lambda d, k, out: A.rand_like.generator_out(
                        empty(d, k), generator=g(d), out=out
                    )
                ),
                uniform_01(),
            ),
            "randn_like": (
                lambda d, k: A.randn_like.generator(empty(d, k), generator=g(d)),
                normal_judge(0.0, 1.0),
            ),
            "randn_like.out": (
                out_of(
                    lambda d, k, out: A.randn_like.generator_out(
                        empty(d, k), generator=g(d), out=out
                    )
                ),
                normal_judge(0.0, 1.0),
            ),
        },
    )


@case(
    SUITE,
    "generator_integer_draws",
    3,
    dtypes=("int64",),
    capability="device_generator",
    expected=expected(
        {n: n != "randperm.out" for n in GENERATOR_INT_DRAWS},
        _outs(GENERATOR_INT_DRAWS),
    ),
    surfaces=(
        *("aten::randint.generator", "aten::randint.generator_out"),
        *("aten::randint.low_generator_out", "aten::randint_like.generator"),
        *("aten::randint_like.generator_out", "aten::randint_like.low_generator_dtype"),
        "aten::randint_like.low_generator_dtype_out",
        *("aten::randint_like.Tensor_generator", "aten::randperm.generator_out"),
        "aten::randint_like.Tensor_generator_out",
    ),
)
def generator_integer_draws(device: str, dtype: str | None) -> Verdicts:
    """randint, randint_like and randperm with an explicit device generator."""
    g = generator
    draws: dict[str, tuple[Any, Judge]] = {
        "randint": (
            lambda d, k: A.randint.generator(10, SIZE, generator=g(d), device=d),
            integers_judge(0, 10),
        ),
        "randint.out": (
            out_of(
                lambda d, k, out: A.randint.generator_out(
                    10, SIZE, generator=g(d), out=out
                )
            ),
            integers_judge(0, 10),
        ),
        "randint.low_out": (
            out_of(
                lambda d, k, out: A.randint.low_generator_out(
                    3, 13, SIZE, generator=g(d), out=out
                )
            ),
            integers_judge(3, 13),
        ),
        "randint_like": (
            lambda d, k: A.randint_like.generator(_ints(d), 10, generator=g(d)),
            integers_judge(0, 10),
        ),
        "randint_like.out": (
            out_of(
                lambda d, k, out: A.randint_like.generator_out(
                    _ints(d), 10, generator=g(d), out=out
                )
            ),
            integers_judge(0, 10),
        ),
        "randint_like.low": (
            lambda d, k: A.randint_like.low_generator_dtype(
                _ints(d), 3, 13, generator=g(d)
            ),
            integers_judge(3, 13),
        ),
        "randint_like.low_out": (
            out_of(
                lambda d, k, out: A.randint_like.low_generator_dtype_out(
                    _ints(d), 3, 13, generator=g(d), out=out
                )
            ),
            integers_judge(3, 13),
        ),
        "randint_like.Tensor": (
            lambda d, k: A.randint_like.Tensor_generator(
                _ints(d), _high(), generator=g(d)
            ),
            integers_judge(0, 10),
        ),
        "randint_like.Tensor_out": (
            out_of(
                lambda d, k, out: A.randint_like.Tensor_generator_out(
                    _ints(d), _high(), generator=g(d), out=out
                )
            ),
            integers_judge(0, 10),
        ),
        "randperm.out": (
            out_of(
                lambda d, k, out: A.randperm.generator_out(
                    DRAWS, generator=g(d), out=out
                )
            ),
            randperm_judge(),
        ),
    }
    return judged_all(device, dtype, draws)


def _rrelu_out(d: str, k: torch.dtype) -> tuple[torch.Tensor, bool]:
    """rrelu_with_noise.out on inputs of -1: the out holds minus each slope."""
    out, noise = empty(d, k), empty(d, k)
    args = (full(-1, d, k), noise, 0.125, 1 / 3, True)
    returned = A.rrelu_with_noise.out(*args, out=out)
    return -out, returned is out


@case(
    SUITE,
    "rrelu_noise",
    3,
    dtypes=FLOATS,
    expected=lambda dtype: {
        **expected({"functional": True, "out": True}, ("out",))(dtype),
        **all_hold("functional.noise_is_slope", "out.noise_is_slope")(dtype),
    },
    surfaces=("aten::rrelu_with_noise_functional", "aten::rrelu_with_noise.out"),
)
def rrelu_noise(device: str, dtype: str | None) -> Verdicts:
    """rrelu in training scales each negative input by a slope drawn from
    U[lower, upper] and returns (or writes) those slopes as its noise."""
    args = (0.125, 1 / 3, True)
    verdicts = judged_all(
        device,
        dtype,
        {
            "functional": (
                lambda d, k: (
                    -A.rrelu_with_noise_functional(full(-1, d, k), empty(d, k), *args)[
                        0
                    ]
                ),
                rrelu_judge(),
            ),
            "out": (_rrelu_out, rrelu_judge()),
        },
    )
    kind = getattr(torch, dtype or "float32")
    result, noise = A.rrelu_with_noise_functional(
        full(-1, device, kind), empty(device, kind), *args
    )
    verdicts["functional.noise_is_slope"] = holds(
        bool(torch.equal(noise.to("cpu"), -result.to("cpu"))),
        "noise_out is not the slope each input was scaled by",
    )
    out, written = empty(device, kind), empty(device, kind)
    A.rrelu_with_noise.out(full(-1, device, kind), written, *args, out=out)
    verdicts["out.noise_is_slope"] = holds(
        bool(torch.equal(written.to("cpu"), -out.to("cpu"))),
        "the noise argument is not written with the slope each input was scaled by",
    )
    return verdicts


CASES = (
    integer_out_draws,
    generator_float_draws,
    generator_integer_draws,
    rrelu_noise,
)
