# mypy: disable-error-code="no-untyped-call"
# (torch leaves Tensor.backward, Function.apply and LR-scheduler factories untyped)
"""Mixed precision and input pipelines in training: autocast, GradScaler and a
DataLoader that pins batches for the device (suite ``training``).

Each path is a capability of its own (``autocast``, ``grad_scaler``, ``pin_memory``):
many backends train in float32 long before they have an autocast policy, scaler
kernels or a host allocator, and a path they do not claim is not_run, not failed.
Autocast runs in float16 and bfloat16, each where the manifest declares the dtype
(a device's default autocast dtype is one of them); its results are compared in that
dtype, whose tolerance covers reduced-precision matmuls accumulating differently.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case

SUITE = "training"


def _model(device: str) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    )
    return model.to(device)


def _batch(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(6, 4).to(device), torch.randn(6, 2).to(device)


@case(
    SUITE,
    "autocast_step",
    2,
    capability="autocast",
    dtypes=("bfloat16", "float16"),
    surfaces=("aten::addmm",),
)
def autocast_step(device: str, dtype: str | None) -> dict[str, Any]:
    """Under torch.autocast(device, dtype) linear layers compute in dtype, other ops
    keep float32, and the float32 weights get float32 gradients."""
    low = getattr(torch, dtype or "bfloat16")
    model = _model(device)
    x, y = _batch(device)
    with torch.autocast(device_type=torch.device(device).type, dtype=low):
        out = model(x)
        kept = x.exp()
        loss = (out.float() - y).pow(2).mean()
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    return {
        "out_dtype": str(out.dtype),
        "unlisted_op_dtype": str(kept.dtype),
        "grad_dtypes": sorted({str(g.dtype) for g in grads.values()}),
        "out": out,
        "loss": loss.to(low),
        "grads": {n: g.to(low) for n, g in grads.items()},
    }


@case(
    SUITE,
    "grad_scaler_step",
    3,
    capability="grad_scaler",
    surfaces=("aten::_amp_foreach_non_finite_check_and_unscale_",),
)
def grad_scaler_step(device: str, dtype: str | None) -> dict[str, Any]:
    """GradScaler unscales finite gradients and steps (the scale grows), and skips
    the step on an infinite gradient (the weights stay, the scale backs off)."""
    model = _model(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    scaler = torch.amp.GradScaler(
        torch.device(device).type, init_scale=2.0**10, growth_interval=1
    )
    x, y = _batch(device)
    scales, snapshots = [], []
    for poison in (1.0, float("inf")):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y) * poison
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(float(scaler.get_scale()))
        snapshots.append([p.detach().clone() for p in model.parameters()])
    skipped = all(
        torch.equal(a, b) for a, b in zip(snapshots[0], snapshots[1], strict=True)
    )
    return {"scales": scales, "inf_step_skipped": skipped, "params": snapshots[1]}


@case(
    SUITE,
    "dataloader_pin_memory",
    3,
    capability="pin_memory",
    needs_other_device=True,  # the CPU has nothing to pin for
)
def dataloader_pin_memory(device: str, dtype: str | None) -> dict[str, Any]:
    """DataLoader(pin_memory=True) pins batches for the device; non_blocking copies
    of them arrive intact."""
    torch.manual_seed(2)
    data = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.arange(8))
    pin = torch.device(device).type != "cpu"  # the CPU reference pins nothing
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=pin)
    pinned, batches = [], []
    for features, labels in loader:
        pinned.append(not pin or (features.is_pinned() and labels.is_pinned()))
        moved = (
            features.to(device, non_blocking=True),
            labels.to(device, non_blocking=True),
        )
        batches.append(moved)
    if pin:
        torch.get_device_module(torch.device(device).type).synchronize()
    return {"pinned": all(pinned), "batches": batches}


CASES = (autocast_step, grad_scaler_step, dataloader_pin_memory)
