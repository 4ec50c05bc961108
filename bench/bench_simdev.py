"""simdev's fallback cost per op: the hot path of every simdev run.

Each row times a small op on simdev and on CPU (same shapes) and reports the per-op
cost on simdev and its ratio to CPU. A fault profile whose rules do not match the op
should cost nothing extra; the "demo profile" rows check that.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torchcts_simdev
from run import BenchRow

REPEAT = 2000


def _per_call_us(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    fn()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def _cases(device: str) -> dict[str, Callable[[], object]]:
    x = torch.randn(16, 16).to(device)
    y = torch.randn(16, 16).to(device)
    return {
        "add": lambda: x + y,
        "sin": lambda: torch.sin(x),
        "sum(dim)": lambda: x.sum(dim=1),
        "matmul": lambda: x @ y,
        "view": lambda: x.view(256),
        "add_ (in-place)": lambda: x.add_(0),
        "to/cpu round trip": lambda: x.cpu().to(device),
    }


def rows() -> list[BenchRow]:
    """Per-op microseconds on simdev (clean and demo) and the ratio to CPU."""
    out: list[BenchRow] = []
    cpu = {name: _per_call_us(fn) for name, fn in _cases("cpu").items()}
    for profile in ("clean", "demo"):
        torchcts_simdev.configure(profile)
        for name, fn in _cases("simdev").items():
            us = _per_call_us(fn)
            out.append(BenchRow("simdev", f"{name} [{profile}]", us, "us/op"))
            out.append(
                BenchRow(
                    "simdev",
                    f"{name} [{profile}] vs cpu",
                    us / cpu[name],
                    "x",
                    f"cpu {cpu[name]:.1f} us",
                )
            )
    torchcts_simdev.configure("clean")
    return out
