"""Strides and memory formats: noncontiguous inputs, channels_last and its propagation."""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case

SUITE = "memory_formats"


@case(SUITE, "channels_last_conversion", 1, surfaces=("aten::contiguous",))
def channels_last_conversion(device: str, dtype: str | None) -> dict[str, Any]:
    """.to(memory_format=channels_last) gives NHWC strides and the same values."""
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5).to(device)
    cl = x.to(memory_format=torch.channels_last)
    return {
        "stride": list(cl.stride()),
        "is_cl": cl.is_contiguous(memory_format=torch.channels_last),
        "is_contiguous": cl.is_contiguous(),
        "values": cl.contiguous(),
    }


@case(SUITE, "channels_last_propagates", 2, surfaces=("aten::relu", "aten::add.Tensor"))
def channels_last_propagates(device: str, dtype: str | None) -> dict[str, Any]:
    """Elementwise ops and empty_like keep the channels_last layout of their input."""
    x = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0))
    cl = x.to(device).to(memory_format=torch.channels_last)
    outs = {"relu": torch.relu(cl), "add": cl + 1, "empty_like": torch.empty_like(cl)}
    return {
        **{f"{k}_stride": list(v.stride()) for k, v in outs.items()},
        "relu": outs["relu"],
        "add": outs["add"],
    }


@case(SUITE, "noncontiguous_inputs", 1, surfaces=("aten::mul.Tensor", "aten::sum"))
def noncontiguous_inputs(device: str, dtype: str | None) -> dict[str, Any]:
    """Ops read transposed, sliced and expanded inputs through their strides."""
    x = torch.arange(20, dtype=torch.float32).reshape(4, 5).to(device)
    t = x.t()
    s = x[::2, 1::2]
    e = torch.arange(5, dtype=torch.float32).to(device).expand(3, 5)
    return {
        "t_mul": t * 2,
        "s_sum": s.sum(0),
        "e_add": e + e,
        "t_contig_stride": list(t.contiguous().stride()),
    }


@case(SUITE, "permute_contiguous", 2, surfaces=("aten::permute", "aten::clone"))
def permute_contiguous(device: str, dtype: str | None) -> dict[str, Any]:
    """permute gives permuted strides; contiguous() then copies into row-major order."""
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4).to(device)
    p = x.permute(2, 0, 1)
    c = p.contiguous()
    return {
        "p_stride": list(p.stride()),
        "c_stride": list(c.stride()),
        "c": c,
        "clone_stride": list(p.clone().stride()),
    }


def _layout(t: torch.Tensor) -> str:
    """A 4-D result's layout in words: what PyTorch's module tests assert of it."""
    if t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    return f"strides {tuple(t.stride())}, not channels_last"


@case(SUITE, "conv2d_channels_last", 2, surfaces=("aten::convolution",))
def conv2d_channels_last(device: str, dtype: str | None) -> dict[str, Any]:
    """conv2d of a channels_last input returns channels_last (PyTorch's
    TestModule.test_memory_format asserts it of Conv2d on every device it runs,
    expected to fail only on CUDA in float64); values as on the CPU."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 6, 6, generator=g).to(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3, generator=g)
    out = torch.nn.functional.conv2d(x.to(device), w.to(device), padding=1)
    return {"layout": _layout(out), "out": out}


@case(SUITE, "batch_norm_channels_last", 2, surfaces=("aten::native_batch_norm",))
def batch_norm_channels_last(device: str, dtype: str | None) -> dict[str, Any]:
    """batch_norm (eval) of a channels_last input returns channels_last (asserted
    of BatchNorm2d by the same test; on MPS expected to fail in training only)."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 4, 5, generator=g).to(memory_format=torch.channels_last)
    mean, var = torch.randn(3, generator=g), torch.rand(3, generator=g) + 0.5
    out = torch.nn.functional.batch_norm(
        x.to(device), mean.to(device), var.to(device), training=False
    )
    return {"layout": _layout(out), "out": out}


CASES = (
    channels_last_conversion,
    channels_last_propagates,
    noncontiguous_inputs,
    permute_contiguous,
    conv2d_channels_last,
    batch_norm_channels_last,
)
