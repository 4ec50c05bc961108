# mypy: disable-error-code="no-untyped-call"
# (torch leaves Tensor.backward, Function.apply and LR-scheduler factories untyped)
"""The autograd engine on the device: numerical gradient checks, version-counter
errors, hooks, retain_graph, grad modes, a custom Function, checkpointing and anomaly
mode.

OpInfo's backward variant checks one op's gradient against CPU; backends also break
the engine around the kernels (a saved tensor modified in place that is not caught, a
hook that never fires, a recomputation that replays other random numbers). Each check
returns what it observed, judged against the CPU run of the same check; the gradient
checks are also properties in their own right (finite differences on the device).

gradcheck runs in float64 where the manifest declares it. A device without float64
gets the float32 case instead, with a documented looser check (`_GRADCHECK_TOL`).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from torchcts_cases.suites.base import case

SUITE = "autograd"
GRADCHECK_DTYPES = ("float64", "float32")
# float32 finite differences: eps 1e-3 leaves ~1e-4 rounding error in each difference
_GRADCHECK_TOL = {
    "float64": {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3},
    "float32": {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2},
}


def _inputs(device: str, dtype: str | None, *shapes: tuple[int, ...]) -> list[Any]:
    """Seeded CPU tensors, moved to `device` as leaves that require grad."""
    torch.manual_seed(0)
    dt = getattr(torch, dtype or "float32")
    host = [torch.randn(*shape, dtype=dt) for shape in shapes]
    return [t.to(device).requires_grad_() for t in host]


def _composite(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise, reduction and matmul backward kernels in one function."""
    return (torch.tanh(a) @ b.sigmoid().t()).softmax(dim=-1).log1p()


def _raised(fn: Any) -> str | None:
    """The type name of what `fn()` raised, None when it returned."""
    try:
        fn()
    except Exception as exc:
        return type(exc).__name__
    return None


def _verdict(check: Any, fn: Any, inputs: list[Any], dtype: str | None) -> object:
    """True when the check passes, else its first line (says which gradient broke)."""
    try:
        with warnings.catch_warnings():  # float32 is chosen on purpose: no warning
            warnings.simplefilter("ignore", UserWarning)
            return bool(check(fn, tuple(inputs), **_GRADCHECK_TOL[dtype or "float32"]))
    except GradcheckError as exc:
        return str(exc).strip().splitlines()[0]


@case(SUITE, "gradcheck", 1, dtypes=GRADCHECK_DTYPES, surfaces=("aten::tanh_backward",))
def gradcheck(device: str, dtype: str | None) -> dict[str, Any]:
    """Analytic gradients match finite differences on the device, and match CPU."""
    a, b = _inputs(device, dtype, (3, 4), (2, 4))
    grads = torch.autograd.grad(_composite(a, b).sum(), (a, b))
    return {
        "gradcheck": _verdict(torch.autograd.gradcheck, _composite, [a, b], dtype),
        "grad_a": grads[0],
        "grad_b": grads[1],
    }


@case(SUITE, "gradgradcheck", 2, dtypes=GRADCHECK_DTYPES)
def gradgradcheck(device: str, dtype: str | None) -> dict[str, Any]:
    """Second derivatives match finite differences of the first, and match CPU."""
    a, b = _inputs(device, dtype, (2, 3), (2, 3))

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x.sin() * y.exp()).sum(dim=1) + (x * y).pow(3).mean()

    (ga,) = torch.autograd.grad(fn(a, b).sum(), a, create_graph=True)
    (gga,) = torch.autograd.grad(ga.sum(), b)
    return {
        "gradgradcheck": _verdict(torch.autograd.gradgradcheck, fn, [a, b], dtype),
        "grad_of_grad": gga,
    }


@case(SUITE, "inplace_version_counter", 1, surfaces=("aten::mul_.Tensor",))
def inplace_version_counter(device: str, dtype: str | None) -> dict[str, Any]:
    """A saved tensor modified in place makes backward raise, as on CPU; a leaf that
    requires grad refuses in-place ops; legal in-place chains get correct gradients."""
    (x,) = _inputs(device, dtype, (4,))
    saved = x.sigmoid()  # sigmoid saves its output
    version = saved._version
    saved.mul_(2)
    modified = _raised(lambda: saved.sum().backward())
    leaf = _raised(lambda: x.add_(1))
    y = x * 2
    y.add_(1).mul_(x)  # mul_ saves x (unchanged) and the old y: legal
    y.sum().backward()
    return {
        "version_bumped": saved._version == version + 1,
        "saved_modified_raises": modified,
        "leaf_inplace_raises": leaf,
        "grad": x.grad,
    }


@case(SUITE, "hooks", 2)
def hooks(device: str, dtype: str | None) -> dict[str, Any]:
    """Tensor hooks can replace a gradient; module forward and full backward hooks
    fire once each and see the tensors of the device."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2).to(device)
    seen: dict[str, Any] = {}

    def forward_hook(module: Any, args: Any, out: torch.Tensor) -> None:
        seen["forward_out"] = out.detach().clone()

    def backward_hook(module: Any, grad_in: Any, grad_out: Any) -> None:
        seen["grad_out"] = grad_out[0].clone()
        seen["grad_in"] = grad_in[0].clone()

    layer.register_forward_hook(forward_hook)
    layer.register_full_backward_hook(backward_hook)
    (x,) = _inputs(device, dtype, (4, 3))
    x.register_hook(lambda g: g * 10)  # the leaf's stored gradient is replaced
    out = layer(x)
    out.register_hook(lambda g: g + 1)
    out.pow(2).sum().backward()
    return {**seen, "x_grad": x.grad, "weight_grad": layer.weight.grad}


@case(SUITE, "retain_graph", 2)
def retain_graph(device: str, dtype: str | None) -> dict[str, Any]:
    """retain_graph allows a second backward (gradients accumulate); without it the
    second backward raises."""
    (x,) = _inputs(device, dtype, (5,))
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone() if x.grad is not None else None
    y.backward()
    z = x.cos().sum()
    z.backward()
    return {
        "first": first,
        "accumulated": x.grad,
        "freed_graph_raises": _raised(lambda: z.backward()),
    }


@case(SUITE, "grad_modes", 1)
def grad_modes(device: str, dtype: str | None) -> dict[str, Any]:
    """no_grad and inference_mode results do not require grad; inference tensors
    refuse to be saved for backward; set_grad_enabled restores the mode."""
    (x,) = _inputs(device, dtype, (3,))
    with torch.no_grad():
        a = x * 2
    with torch.inference_mode():
        b = x * 3
    with torch.set_grad_enabled(False):
        c = x + 1
    return {
        "no_grad_requires_grad": a.requires_grad,
        "inference_requires_grad": b.requires_grad,
        "is_inference": b.is_inference(),
        "inference_in_graph_raises": _raised(lambda: (x * b).sum().backward()),
        "set_grad_enabled": c.requires_grad,
        "enabled_after": torch.is_grad_enabled(),
        "values": (a, b, c),
    }


class _ScaledExp(torch.autograd.Function):
    """exp(x) * k with a hand-written backward that reuses the saved output."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, k: float) -> torch.Tensor:
        out = x.exp() * k
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (out,) = ctx.saved_tensors
        return grad * out, None


@case(SUITE, "custom_function", 2)
def custom_function(device: str, dtype: str | None) -> dict[str, Any]:
    """A custom autograd.Function's backward runs with its saved tensors on the
    device and agrees with the built-in gradient."""
    (x,) = _inputs(device, dtype, (2, 3))
    out = _ScaledExp.apply(x, 0.5)
    out.sum().backward()
    custom = x.grad
    x.grad = None
    (x.exp() * 0.5).sum().backward()
    return {
        "out": out,
        "grad": custom,
        "matches_builtin": bool(torch.equal(custom, x.grad))
        if custom is not None
        else False,
    }


@case(SUITE, "checkpoint", 3, surfaces=("aten::native_dropout",))
def checkpoint(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.utils.checkpoint (reentrant and not) recomputes the forward in backward
    with the same random numbers: gradients equal the plain run's."""
    from torch.utils.checkpoint import checkpoint as ckpt

    def block(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x.sin(), p=0.5, training=True).exp()

    def grad_of(reentrant: bool | None) -> torch.Tensor:
        (x,) = _inputs(device, dtype, (64,))
        torch.manual_seed(5)
        out = block(x) if reentrant is None else ckpt(block, x, use_reentrant=reentrant)
        out.sum().backward()
        grad: torch.Tensor | None = x.grad
        assert grad is not None
        return grad

    plain = grad_of(None)
    (x,) = _inputs(device, dtype, (8,))
    no_rng = ckpt(lambda t: t.tanh().pow(2), x, use_reentrant=False)
    no_rng.sum().backward()
    return {
        "non_reentrant_matches": bool(torch.equal(grad_of(False), plain)),
        "reentrant_matches": bool(torch.equal(grad_of(True), plain)),
        "deterministic_grad": x.grad,
    }


@case(SUITE, "anomaly_mode", 3)
def anomaly_mode(device: str, dtype: str | None) -> dict[str, Any]:
    """detect_anomaly raises when a backward produces NaN, naming the function;
    without anomaly mode the NaN gradient is returned silently."""
    x = torch.tensor([-1.0, 4.0]).to(device).requires_grad_()
    message = ""
    try:
        with warnings.catch_warnings():  # anomaly mode warns with the forward trace
            warnings.simplefilter("ignore", UserWarning)
            with torch.autograd.detect_anomaly(check_nan=True):
                x.sqrt().sum().backward()
    except RuntimeError as exc:
        message = str(exc)
    x.grad = None
    x.sqrt().sum().backward()
    return {
        "raised": bool(message),
        "names_function": "SqrtBackward0" in message,
        "silent_grad": x.grad,
    }


CASES = (
    gradcheck,
    gradgradcheck,
    inplace_version_counter,
    hooks,
    retain_graph,
    grad_modes,
    custom_function,
    checkpoint,
    anomaly_mode,
)
