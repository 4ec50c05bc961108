"""Repro for TorchCTS case training/accumulation_and_clipping/check/-/- (torch 2.13.0+cpu)."""
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


from collections.abc import Callable
from typing import Any

import torch


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

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [0.0001, 0.0001], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
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
    return accumulation_and_clipping(device, None)


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
