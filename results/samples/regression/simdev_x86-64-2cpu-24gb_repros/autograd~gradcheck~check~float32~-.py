"""Repro for TorchCTS case autograd/gradcheck/check/float32/- (torch 2.13.0+cpu)."""
import json
import torch
import torchcts_simdev
_configure = getattr(torchcts_simdev, 'torchcts_configure', None)
if _configure is not None:
    _configure(json.loads("{\"fault_profile\": \"demo\"}"))


def case(*args, **kwargs):
    return lambda check: check


def storage_id(t):
    return int(t.untyped_storage()._cdata)


class ExpectedSource:
    CPU_REFERENCE = REVIEWED_REFERENCE = LEGAL_OUTPUT = PROPERTY = None


def find_op(segment):
    from torch.testing._internal.common_methods_invocations import op_db

    return next(o for o in op_db if (o.name + "." + o.variant_test_name
                                     if o.variant_test_name else o.name) == segment)



class RunLimits:
    def __init__(self, device_count, memory_mb):
        self.device_count, self.memory_mb = device_count, memory_mb


def run_limits():  # DEVICE_COUNT, RESOURCE_LIMITS memory_mb
    return RunLimits(1, 4096)


from collections.abc import Callable
from typing import Any


def holds(ok: bool, why: str) -> bool | str:
    """True when a property holds, else the sentence saying how it broke, with the
    numbers seen (judged against True, the sentence is the mismatch)."""
    return True if ok else why


def all_hold(*keys: str) -> Callable[[str | None], dict[str, Any]]:
    """The hand-written expectation of a property case: each of `keys` holds."""
    return lambda dtype: dict.fromkeys(keys, True)


def device_function(device: str, name: str, capability: str) -> Any:
    """``torch.<device>.<name>`` (the device module's function), or NotImplementedError
    naming it: a manifest claiming `capability` claims the function exists."""
    try:
        module = torch.get_device_module(device)
    except RuntimeError as exc:
        raise NotImplementedError(
            f"torch.get_device_module({device!r}) failed ({exc}): {capability} is "
            "claimed, which needs the device module"
        ) from None
    found = getattr(module, name, None)
    if not callable(found):
        raise NotImplementedError(
            f"torch.{device}.{name} is missing: {capability} is claimed, which needs it"
        )
    return found
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


import warnings
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError


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

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [1e-05, 1.3e-05], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
METADATA_ONLY = False
JUDGE_STRIDES = True
CPU_PINNED = ()

import math
import sys


def to_dev(x, device, _seen=None):
    # the tensors at CPU_PINNED (in order of appearance) stay on the CPU, as OpInfo
    # builds them for any device
    seen = [0] if _seen is None else _seen
    if isinstance(x, torch.Tensor):
        where = "cpu" if seen[0] in CPU_PINNED else device
        seen[0] += 1
        moved = x.detach().to(where, copy=True)
        return moved.requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(to_dev(v, device, seen) for v in x)
    if isinstance(x, dict):
        return {k: (torch.device(device) if k == "device" else to_dev(v, device, seen))
                for k, v in x.items()}
    return x


def host_copy(t):
    # .to("cpu") makes a tensor with gaps or overlaps contiguous: copy the storage
    # span it covers and view it with the device's strides, as TorchCTS did
    host = t.to("cpu")
    if (t.layout != torch.strided or t.numel() <= 1 or t.is_quantized
            or host.stride() == t.stride()):
        return host
    span = 1 + sum((n - 1) * s for n, s in zip(t.size(), t.stride()))
    flat = t.as_strided((span,), (1,), t.storage_offset()).to("cpu")
    return flat.as_strided(t.size(), t.stride(), 0)


def outcome(run, device, expected=None):
    try:
        return run(device)
    except Exception as exc:  # CPU's exception is the expected behaviour
        if device != "cpu" and not isinstance(expected, BaseException):
            raise  # the device raised where CPU returned: the traceback says why
        return exc


def empty_on(template, device):
    if isinstance(template, torch.Tensor):
        return torch.empty(template.shape, dtype=template.dtype, device=device)
    return type(template)(empty_on(t, device) for t in template)


def first_difference(exp, got, path="output"):
    if isinstance(exp, BaseException):
        if isinstance(got, BaseException):
            return None if isinstance(got, type(exp)) else (
                f"{path}: expected {type(exp).__name__}, got {type(got).__name__}")
        return f"{path}: expected {type(exp).__name__} ({exp}), but nothing was raised"
    if isinstance(exp, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{path}: expected a tensor, got {type(got).__name__}"
        got = host_copy(got.detach())
        if exp.dtype != got.dtype:
            return f"{path}: dtype {got.dtype}, expected {exp.dtype}"
        if exp.shape != got.shape:
            return f"{path}: shape {list(got.shape)}, expected {list(exp.shape)}"
        if exp.layout != torch.strided:
            exp, got = exp.to_dense(), got.to_dense()
        if METADATA_ONLY:
            if JUDGE_STRIDES and exp.numel() > 1 and exp.stride() != got.stride():
                return f"{path}: strides {got.stride()}, expected {exp.stride()}"
            return None
        exp = exp.detach().resolve_conj().resolve_neg()
        got = got.resolve_conj().resolve_neg()
        name = str(exp.dtype).replace("torch.", "")
        atol, rtol = TOLERANCES.get(name, (0.0, 0.0))
        try:
            torch.testing.assert_close(got, exp, atol=atol, rtol=rtol,
                                       equal_nan=True, check_stride=False)
        except AssertionError as exc:
            return f"{path}: " + "; ".join(
                line.strip() for line in str(exc).splitlines() if line.strip())
        return None
    if isinstance(exp, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(exp):
            return f"{path}: expected {len(exp)} items, got {got!r:.80}"
        for i, (e, g) in enumerate(zip(exp, got)):
            found = first_difference(e, g, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(exp, dict):
        if not isinstance(got, dict) or set(got) != set(exp):
            return f"{path}: expected keys {sorted(exp)}, got {got!r:.80}"
        for key in exp:
            found = first_difference(exp[key], got[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(exp, float) and isinstance(got, (int, float)) and not METADATA_ONLY:
        atol, rtol = TOLERANCES.get("float64", (0.0, 0.0))
        if exp == got or exp != exp and got != got:
            return None  # equal_nan; Inf equals only itself
        finite = math.isfinite(exp) and math.isfinite(got)
        if finite and abs(exp - got) <= atol + rtol * abs(exp):
            return None
    if METADATA_ONLY and isinstance(exp, (int, float)) and not isinstance(exp, bool):
        return None
    if exp != got:
        return f"{path}: expected {exp!r:.80}, got {got!r:.80}"
    return None


def judge(expected, got):
    problem = first_difference(expected, got)
    if problem:
        print("MISMATCH on", DEVICE + ":", problem)
        sys.exit(1)
    print("matches the CPU result on", DEVICE + ": the failure did not reproduce")


def run(device):
    return gradcheck(device, 'float32')


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
