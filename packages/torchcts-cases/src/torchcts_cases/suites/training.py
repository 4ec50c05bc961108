# mypy: disable-error-code="no-untyped-call"
# (torch leaves Tensor.backward, Function.apply and LR-scheduler factories untyped)
"""Training on the device: optimizer updates, gradient accumulation and clipping, LR
schedulers and state_dict round trips, each a few steps of a tiny MLP compared with
the same steps on CPU.

Optimizers are where backends silently go wrong (a fused kernel that forgets weight
decay, a foreach path that skips a tensor, state that lands on the wrong device), and a
wrong update only shows a few steps later. Every check starts from the same seeded CPU
weights and batches, so the CPU run is the expectation. Several steps compound the
rounding of one op, hence the documented tolerance `STEP_TOLERANCE` (the manifest's
TOLERANCES still wins). foreach and fused paths are separate capabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts_cases.suites.base import case

SUITE = "training"
STEPS = 3
# (dtype, atol, rtol) for parameters after STEPS updates; one step's float32 rounding
# difference (reduction order) is ~1e-7, and Adam's division by sqrt(v) amplifies it
STEP_TOLERANCE = (("float32", 1e-4, 1e-4),)

MakeOptimizer = Callable[[Any], torch.optim.Optimizer]


def _model(device: str) -> torch.nn.Module:
    """A seeded 4-8-2 MLP, built on CPU and moved, so every device starts the same."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
    )
    return model.to(device)


def _batch(device: str, step: int, rows: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded inputs and targets of one step."""
    torch.manual_seed(100 + step)
    return torch.randn(rows, 4).to(device), torch.randn(rows, 2).to(device)


def _loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.mse_loss(model(x), y)


def _params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach() for name, p in model.named_parameters()}


def _train(device: str, make: MakeOptimizer, steps: int = STEPS) -> dict[str, Any]:
    """`steps` updates with the optimizer `make` builds: losses and final weights."""
    model = _model(device)
    opt = make(model.parameters())
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = _loss(model, *_batch(device, step))
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return {"losses": torch.stack(losses), "params": _params(model)}


def _optimizers(**flags: Any) -> dict[str, MakeOptimizer]:
    """SGD (momentum, Nesterov, weight decay), Adam (AMSGrad) and AdamW with `flags`."""
    return {
        "sgd": lambda p: torch.optim.SGD(
            p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2, **flags
        ),
        "adam": lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True, **flags),
        "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, **flags),
    }


def _each(
    flags: dict[str, bool], device: str, names: tuple[str, ...]
) -> dict[str, Any]:
    makers = _optimizers(**flags)
    return {name: _train(device, makers[name]) for name in names}


@case(SUITE, "sgd_steps", 1, tolerances=STEP_TOLERANCE, surfaces=("aten::add_.Tensor",))
def sgd_steps(device: str, dtype: str | None) -> dict[str, Any]:
    """SGD with momentum, Nesterov and weight decay (single-tensor path) over 3 steps."""
    return _each({"foreach": False}, device, ("sgd",))


@case(SUITE, "adam_steps", 1, tolerances=STEP_TOLERANCE, surfaces=("aten::addcdiv_",))
def adam_steps(device: str, dtype: str | None) -> dict[str, Any]:
    """Adam with AMSGrad and AdamW with decoupled weight decay (single-tensor path)."""
    return _each({"foreach": False}, device, ("adam", "adamw"))


@case(
    SUITE,
    "foreach_optimizers",
    2,
    capability="foreach_optimizers",
    tolerances=STEP_TOLERANCE,
    surfaces=("aten::_foreach_add_.List", "aten::_foreach_addcdiv_.Scalar"),
)
def foreach_optimizers(device: str, dtype: str | None) -> dict[str, Any]:
    """SGD, Adam and AdamW with foreach=True (the _foreach_* kernels) over 3 steps."""
    return _each({"foreach": True}, device, ("sgd", "adam", "adamw"))


@case(
    SUITE,
    "fused_optimizers",
    3,
    capability="fused_optimizers",
    tolerances=STEP_TOLERANCE,
    surfaces=("aten::_fused_adam_", "aten::_fused_adamw_", "aten::_fused_sgd_"),
)
def fused_optimizers(device: str, dtype: str | None) -> dict[str, Any]:
    """SGD, Adam and AdamW with fused=True (one kernel per step) over 3 steps."""
    return _each({"fused": True}, device, ("sgd", "adam", "adamw"))


@case(SUITE, "accumulation_and_clipping", 1, tolerances=STEP_TOLERANCE)
def accumulation_and_clipping(device: str, dtype: str | None) -> dict[str, Any]:
    """Gradients accumulated over two half-batches equal one full batch's; norm and
    value clipping return and apply what CPU does."""
    x, y = _batch(device, 0)
    whole = _model(device)
    _loss(whole, x, y).backward()
    halves = _model(device)
    for part in (slice(0, 3), slice(3, 6)):
        (_loss(halves, x[part], y[part]) / 2).backward()
    pairs = zip(whole.parameters(), halves.parameters(), strict=True)
    same = all(
        a.grad is not None
        and b.grad is not None
        and torch.allclose(a.grad, b.grad, atol=1e-6, rtol=1e-5)
        for a, b in pairs
    )
    norm = torch.nn.utils.clip_grad_norm_(halves.parameters(), max_norm=0.05)
    clipped_norm = torch.nn.utils.get_total_norm(
        [p.grad for p in halves.parameters() if p.grad is not None]
    )
    torch.nn.utils.clip_grad_value_(whole.parameters(), clip_value=0.01)
    return {
        "accumulated_equals_full_batch": same,
        "total_norm_before": norm,
        "total_norm_after": clipped_norm,
        "norm_clipped_grads": [p.grad for p in halves.parameters()],
        "value_clipped_grads": [p.grad for p in whole.parameters()],
    }


@case(SUITE, "lr_schedulers", 2, tolerances=STEP_TOLERANCE)
def lr_schedulers(device: str, dtype: str | None) -> dict[str, Any]:
    """StepLR, CosineAnnealingLR and OneCycleLR set the same learning rates on the
    device's optimizer, and the weights follow them."""
    schedules = {
        "step": lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5),
        "cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4),
        "one_cycle": lambda o: torch.optim.lr_scheduler.OneCycleLR(
            o, max_lr=0.2, total_steps=STEPS + 1
        ),
    }
    out: dict[str, Any] = {}
    for name, schedule in schedules.items():
        model = _model(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5, foreach=False)
        scheduler = schedule(opt)
        lrs = []
        for step in range(STEPS):
            opt.zero_grad()
            _loss(model, *_batch(device, step)).backward()
            opt.step()
            scheduler.step()
            lrs.append(float(opt.param_groups[0]["lr"]))
        out[name] = {"lrs": torch.tensor(lrs, dtype=torch.float64), **_params(model)}
    return out


@case(SUITE, "state_dict_roundtrip", 2, tolerances=STEP_TOLERANCE)
def state_dict_roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """Module and optimizer state_dicts loaded into fresh objects continue training
    exactly as the originals do, with the state kept on the device."""
    model = _model(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, foreach=False)
    for step in range(2):
        opt.zero_grad()
        _loss(model, *_batch(device, step)).backward()
        opt.step()
    copy = _model(device)
    copy.load_state_dict(model.state_dict())
    copy_opt = torch.optim.Adam(copy.parameters(), lr=0.01, foreach=False)
    copy_opt.load_state_dict(opt.state_dict())
    states = [s for st in copy_opt.state.values() for s in st.values()]
    on_device = all(
        s.device.type == torch.device(device).type
        for s in states
        if isinstance(s, torch.Tensor) and s.dim() > 0
    )
    for m, o in ((model, opt), (copy, copy_opt)):
        o.zero_grad()
        _loss(m, *_batch(device, 2)).backward()
        o.step()
    identical = all(
        torch.equal(a, b)
        for a, b in zip(model.parameters(), copy.parameters(), strict=True)
    )
    return {
        "state_on_device": on_device,
        "continues_identically": identical,
        "params": _params(copy),
    }


CASES = (
    sgd_steps,
    adam_steps,
    foreach_optimizers,
    fused_optimizers,
    accumulation_and_clipping,
    lr_schedulers,
    state_dict_roundtrip,
)
