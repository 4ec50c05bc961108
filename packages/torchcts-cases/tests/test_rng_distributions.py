"""RNG distribution cases: the statistics' bounds, the properties they judge, and
their verdicts on CPU, on clean simdev and on simdev with a wrong RNG kernel."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
import torch
import torchcts_simdev
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_cases.suites import rng_stats as stats
from torchcts_schema import CAPABILITY_NAMES, Manifest

MakeManifest = Callable[..., Manifest]
RNG_CASES = sorted(
    case_id
    for case_id, case in all_hand_cases().items()
    if case.check.__module__.endswith(("rng_continuous", "rng_discrete"))
)


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    """Each test starts and ends on simdev's clean profile."""
    torchcts_simdev.configure("clean")
    yield
    torchcts_simdev.configure("clean")


def _manifest(make: MakeManifest, device: str) -> Manifest:
    extra = {"BACKEND_IMPORT": "torchcts_simdev"} if device == "simdev" else {}
    return make(
        DEVICE=device,
        DTYPES={"float32": True, "float64": True, "int64": True},
        CAPABILITIES=list(CAPABILITY_NAMES),
        LEVEL=8,
        **extra,
    )


def test_dkw_bound_is_the_documented_number() -> None:
    """20,000 draws at false-alarm probability 1e-6: eps = sqrt(ln(2e6) / 40000)."""
    assert stats.dkw_bound(20_000) == pytest.approx(math.sqrt(math.log(2e6) / 4e4))
    assert 0.0190 < stats.dkw_bound(stats.DRAWS) < 0.0191


def test_ks_accepts_the_distribution_and_rejects_a_shift_or_a_cut_tail() -> None:
    """N(0, 1) draws pass against N(0, 1); a mean off by 0.1 sd, or the tails cut at
    1.5 sd, fail with the distance and the bound in the sentence."""
    gen = torch.Generator().manual_seed(0)
    draws = torch.randn(stats.DRAWS, generator=gen, dtype=torch.float64)
    cdf = stats.normal_cdf(0, 1)
    assert stats.ks_continuous(draws, cdf)[0]
    ok, why = stats.ks_continuous(draws + 0.1, cdf)
    assert not ok and "exceeds 0.0190, the DKW bound for 20000 draws" in why
    assert not stats.ks_continuous(draws.clamp(-1.5, 1.5), cdf)[0]
    assert not stats.mean_near(draws + 0.1, 0.0, 1.0)[0]
    assert stats.mean_near(draws, 0.0, 1.0)[0]


def test_discrete_ks_tells_p_035_from_p_03() -> None:
    """Bernoulli(0.3) draws pass against p = 0.3; Bernoulli(0.35) draws fail."""
    gen = torch.Generator().manual_seed(1)
    u = torch.rand(stats.DRAWS, generator=gen, dtype=torch.float64)
    cdf = stats.discrete_cdf([0.7, 0.3])
    assert stats.ks_discrete((u < 0.3).double(), cdf)[0]
    assert not stats.ks_discrete((u < 0.35).double(), cdf)[0]


def test_seed_properties_fail_for_a_generator_that_ignores_the_seed() -> None:
    """A draw from its own generator is not reproducible; a constant one does not
    change with the seed; a draw outside the support says how many."""
    private = torch.Generator().manual_seed(3)
    own = stats.judged(
        "cpu",
        "float32",
        lambda d, k: torch.rand(stats.DRAWS, generator=private, dtype=k),
        support=stats.within(0, 1),
        fit=lambda x: stats.ks_continuous(x, lambda t: t),
    )
    assert isinstance(own["reproducible"], str) and own["seeds_differ"] is True
    constant = stats.judged(
        "cpu",
        "float32",
        lambda d, k: torch.full((stats.DRAWS,), 2.0, dtype=k),
        support=stats.within(0, 1),
        fit=lambda x: stats.ks_continuous(x, lambda t: t.clamp(0, 1)),
    )
    assert isinstance(constant["seeds_differ"], str)
    assert "20000 of 20000 draws outside [0, 1]" in str(constant["in_support"])


@pytest.mark.parametrize("device", ["cpu", "simdev"])
def test_every_rng_distribution_case_passes(
    make_manifest: MakeManifest, device: str
) -> None:
    """On CPU and on clean simdev every distribution case holds."""
    manifest = _manifest(make_manifest, device)
    failures = []
    for case_id in RNG_CASES:
        case = prepare(get_case(case_id), manifest)
        verdict = case.judge(case.reference(), case.run_on(device))
        if not verdict.ok:
            failures.append((case_id, verdict.mismatch))
    assert len(RNG_CASES) >= 20 and failures == []


def test_a_wrong_exponential_kernel_fails_its_distribution(
    make_manifest: MakeManifest,
) -> None:
    """simdev's exponential_ writing x + |x| + 1 fails the case, naming the KS
    distance; the other distributions still pass."""
    torchcts_simdev.configure(
        {
            "name": "test",
            "rules": [
                {
                    "op": "aten::exponential_",
                    "fault": "wrong_values",
                    "magnitude": "large",
                }
            ],
        }
    )
    manifest = _manifest(make_manifest, "simdev")
    case = prepare(get_case("rng/exponential_distribution/check/float32/-"), manifest)
    verdict = case.judge(case.reference(), case.run_on("simdev"))
    assert not verdict.ok and "KS distance" in (verdict.mismatch or "")
    other = prepare(get_case("rng/uniform_distribution/check/float32/-"), manifest)
    assert other.judge(other.reference(), other.run_on("simdev")).ok
