"""Factories on the device: empty, zeros, ones, full, arange, linspace, eye, randn,
the window functions (hann, hamming, blackman, bartlett, kaiser), ..."""

from __future__ import annotations

from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case

SUITE = "factories"
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")


@case(
    SUITE,
    "filled",
    1,
    dtypes=DTYPES,
    surfaces=("aten::zeros", "aten::ones", "aten::full"),
)
def filled(device: str, dtype: str | None) -> dict[str, Any]:
    """zeros, ones, full and *_like create the right values, dtype and device."""
    d = getattr(torch, dtype or "float32")
    z = torch.zeros(2, 3, dtype=d, device=device)
    o = torch.ones(4, dtype=d, device=device)
    f = torch.full((2, 2), 1, dtype=d, device=device)
    zl = torch.zeros_like(f)
    ol = torch.ones_like(z)
    return {
        "zeros": z,
        "ones": o,
        "full": f,
        "zeros_like": zl,
        "ones_like": ol,
        "on_device": z.device.type == torch.device(device).type,
    }


@case(
    SUITE,
    "empty_metadata",
    1,
    dtypes=DTYPES,
    source=ExpectedSource.LEGAL_OUTPUT,
    metadata_only=True,
    surfaces=("aten::empty.memory_format", "aten::empty_strided"),
)
def empty_metadata(device: str, dtype: str | None) -> dict[str, Any]:
    """empty and empty_strided are uninitialised: only shape, dtype and strides count."""
    d = getattr(torch, dtype or "float32")
    return {
        "empty": torch.empty(3, 4, dtype=d, device=device),
        "strided": torch.empty_strided((2, 3), (1, 2), dtype=d, device=device),
        "like": torch.empty_like(torch.zeros(5, 2, dtype=d, device=device)),
    }


@case(
    SUITE,
    "ranges",
    1,
    dtypes=("float32", "int64"),
    surfaces=("aten::arange", "aten::linspace"),
)
def ranges(device: str, dtype: str | None) -> dict[str, Any]:
    """arange with negative steps, linspace, logspace and eye match CPU."""
    d = getattr(torch, dtype or "float32")
    out: dict[str, Any] = {
        "arange": torch.arange(10, dtype=d, device=device),
        "arange_step": torch.arange(10, -3, -3, dtype=d, device=device),
        "eye": torch.eye(3, 4, dtype=d, device=device),
    }
    if d.is_floating_point:
        out["linspace"] = torch.linspace(-1, 1, 9, dtype=d, device=device)
        out["logspace"] = torch.logspace(0, 2, 5, dtype=d, device=device)
        out["arange_frac"] = torch.arange(0, 1, 0.125, dtype=d, device=device)
    return out


@case(SUITE, "tensor_constructor", 1, surfaces=("aten::lift_fresh",))
def tensor_constructor(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.tensor(data, device=...) infers dtypes and keeps values."""
    return {
        "floats": torch.tensor([[1.5, -2.0], [3.25, 0.0]], device=device),
        "ints": torch.tensor([1, 2, 3], device=device),
        "bools": torch.tensor([True, False], device=device),
        "scalar": torch.tensor(3.0, device=device),
    }


@case(
    SUITE,
    "random_factories",
    2,
    source=ExpectedSource.PROPERTY,
    surfaces=("aten::randn", "aten::rand", "aten::randint", "aten::randperm"),
)
def random_factories(device: str, dtype: str | None) -> dict[str, Any]:
    """randn, rand, randint, randperm: right shape and dtype, values in range."""
    torch.manual_seed(0)
    rn = torch.randn(64, device=device)
    r = torch.rand(64, device=device)
    ri = torch.randint(3, 9, (64,), device=device)
    rp = torch.randperm(20, device=device)
    return {
        "randn_shape": list(rn.shape),
        "randn_finite": bool(torch.isfinite(rn).all()),
        "rand_in_range": bool(((r >= 0) & (r < 1)).all()),
        "randint_in_range": bool(((ri >= 3) & (ri < 9)).all()),
        "randint_dtype": str(ri.dtype),
        "randperm_is_perm": bool(torch.equal(rp.sort().values.cpu(), torch.arange(20))),
    }


# lengths 0 and 1 are special-cased by every window (empty, and [1.]); 2 and an odd
# length reach both halves of bartlett's triangle; 64 is a realistic STFT frame
WINDOW_LENGTHS = (0, 1, 2, 7, 64)


@case(
    SUITE,
    "windows",
    2,
    dtypes=("float32", "float64", "float16", "bfloat16"),
    surfaces=(
        "aten::hann_window",
        "aten::hann_window.periodic",
        "aten::hamming_window",
        "aten::hamming_window.periodic",
        "aten::hamming_window.periodic_alpha",
        "aten::hamming_window.periodic_alpha_beta",
        "aten::blackman_window",
        "aten::blackman_window.periodic",
        "aten::bartlett_window",
        "aten::bartlett_window.periodic",
        "aten::kaiser_window",
        "aten::kaiser_window.periodic",
        "aten::kaiser_window.beta",
    ),
)
def windows(device: str, dtype: str | None) -> dict[str, Any]:
    """The window factories, periodic and symmetric, with their shape parameters,
    match CPU (the functions in torch.signal.windows are OpInfo cases)."""
    d = getattr(torch, dtype or "float32")
    out: dict[str, Any] = {}
    for n in WINDOW_LENGTHS:
        made = {
            "hann": torch.hann_window(n, dtype=d, device=device),
            "hann_symmetric": torch.hann_window(n, False, dtype=d, device=device),
            "hamming": torch.hamming_window(n, dtype=d, device=device),
            "hamming_symmetric": torch.hamming_window(n, False, dtype=d, device=device),
            "hamming_alpha": torch.hamming_window(n, True, 0.5, dtype=d, device=device),
            "hamming_alpha_beta": torch.hamming_window(
                n, False, 0.6, 0.4, dtype=d, device=device
            ),
            "blackman": torch.blackman_window(n, dtype=d, device=device),
            "blackman_symmetric": torch.blackman_window(
                n, False, dtype=d, device=device
            ),
            "bartlett": torch.bartlett_window(n, dtype=d, device=device),
            "bartlett_symmetric": torch.bartlett_window(
                n, False, dtype=d, device=device
            ),
            "kaiser": torch.kaiser_window(n, dtype=d, device=device),
            "kaiser_symmetric": torch.kaiser_window(n, False, dtype=d, device=device),
            "kaiser_beta": torch.kaiser_window(n, True, 8.0, dtype=d, device=device),
        }
        out |= {f"{name}[{n}]": w for name, w in made.items()}
    out["on_device"] = all(
        isinstance(w, torch.Tensor) and w.device.type == torch.device(device).type
        for w in out.values()
    )
    return out


CASES = (filled, empty_metadata, ranges, tensor_constructor, random_factories, windows)
