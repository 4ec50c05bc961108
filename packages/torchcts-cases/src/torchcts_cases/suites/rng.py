"""RNG on the device: the same seed gives the same stream, twice; different seeds
differ; a saved generator state replays. Values are never compared with CPU (devices
may use other generators); the properties are.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case

SUITE = "rng"


def _draw(device: str, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(256, device=device).to("cpu")


@case(SUITE, "same_seed_same_stream", 1, surfaces=("aten::normal_",))
def same_seed_same_stream(device: str, dtype: str | None) -> dict[str, Any]:
    """manual_seed(s) then randn twice gives identical streams; another seed differs."""
    a = _draw(device, 1234)
    b = _draw(device, 1234)
    c = _draw(device, 4321)
    return {"same": bool(torch.equal(a, b)), "differs": not bool(torch.equal(a, c))}


@case(SUITE, "stream_advances", 2, surfaces=("aten::uniform_",))
def stream_advances(device: str, dtype: str | None) -> dict[str, Any]:
    """Two draws after one seed differ from each other (the stream advances)."""
    torch.manual_seed(7)
    a = torch.rand(128, device=device).to("cpu")
    b = torch.rand(128, device=device).to("cpu")
    return {"advances": not bool(torch.equal(a, b))}


@case(SUITE, "inplace_random_ops", 2, surfaces=("aten::bernoulli_", "aten::uniform_"))
def inplace_random_ops(device: str, dtype: str | None) -> dict[str, Any]:
    """bernoulli_, uniform_, normal_ and random_ fill in range and are reproducible."""

    def fill(seed: int) -> list[torch.Tensor]:
        torch.manual_seed(seed)
        x = torch.empty(512, device=device)
        return [
            x.clone().bernoulli_(0.3).to("cpu"),
            x.clone().uniform_(-2, 2).to("cpu"),
            x.clone().normal_(1.0, 0.5).to("cpu"),
            x.clone().random_(0, 10).to("cpu"),
        ]

    first, second = fill(3), fill(3)
    bern, unif, _, rnd = first
    return {
        "reproducible": all(
            bool(torch.equal(a, b)) for a, b in zip(first, second, strict=True)
        ),
        "bernoulli_binary": bool(((bern == 0) | (bern == 1)).all()),
        "uniform_range": bool(((unif >= -2) & (unif <= 2)).all()),
        "random_range": bool(((rnd >= 0) & (rnd < 10)).all()),
    }


@case(SUITE, "dropout_reproducible", 3, surfaces=("aten::native_dropout",))
def dropout_reproducible(device: str, dtype: str | None) -> dict[str, Any]:
    """dropout with a fixed seed repeats, zeros about p of the values and rescales."""

    def run() -> torch.Tensor:
        torch.manual_seed(11)
        return torch.nn.functional.dropout(
            torch.ones(4096, device=device), p=0.25, training=True
        ).to("cpu")

    a, b = run(), run()
    kept = a[a != 0]
    frac = float((a == 0).float().mean())
    return {
        "reproducible": bool(torch.equal(a, b)),
        "zero_fraction_plausible": 0.18 < frac < 0.32,
        "scaled": bool(torch.allclose(kept, torch.full_like(kept, 1 / 0.75))),
    }


CASES = (
    same_seed_same_stream,
    stream_advances,
    inplace_random_ops,
    dropout_reproducible,
)
