"""Repro for TorchCTS case mutation/inplace_on_view/check/-/- (torch 2.13.0+cpu)."""
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
"""In-place mutation semantics: in-place ops return self, bump the version counter and
mutate only what they should.
"""


from typing import Any

import torch


SUITE = "mutation"
DTYPES = ("float32", "int64")


@case(SUITE, "inplace_returns_self", 1, dtypes=DTYPES, surfaces=("aten::add_",))
def inplace_returns_self(device: str, dtype: str | None) -> dict[str, Any]:
    """x.add_(1) returns x itself, keeps its storage and bumps its version."""
    x = torch.arange(6, dtype=getattr(torch, dtype or "float32")).to(device)
    before = x._version
    sid = storage_id(x)
    y = x.add_(1)
    y2 = x.mul_(3)
    return {
        "returns_self": y is x and y2 is x,
        "same_storage": storage_id(x) == sid,
        "version_bumped": x._version > before,
        "values": x,
    }


@case(SUITE, "inplace_on_view", 1, surfaces=("aten::mul_",))
def inplace_on_view(device: str, dtype: str | None) -> dict[str, Any]:
    """An in-place op on a strided view changes only the viewed elements."""
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    x[:, 1::2].mul_(-1)
    x.t()[0].add_(100)
    return {"x": x}


@case(
    SUITE,
    "masked_index_inplace",
    2,
    surfaces=("aten::masked_fill_", "aten::index_put_"),
)
def masked_index_inplace(device: str, dtype: str | None) -> dict[str, Any]:
    """masked_fill_, index_put_ (with accumulate) and index_add_ mutate in place."""
    x = torch.zeros(5, device=device)
    mask = torch.tensor([True, False, True, False, False]).to(device)
    x.masked_fill_(mask, 2.0)
    idx = torch.tensor([1, 1, 4]).to(device)
    x.index_put_((idx,), torch.tensor([1.0, 2.0, 3.0]).to(device), accumulate=True)
    y = torch.zeros(3, 2, device=device)
    y.index_add_(0, torch.tensor([0, 2, 0]).to(device), torch.ones(3, 2).to(device))
    return {"x": x, "y": y}


@case(SUITE, "copy_broadcast_and_cast", 2, surfaces=("aten::copy_",))
def copy_broadcast_and_cast(device: str, dtype: str | None) -> dict[str, Any]:
    """copy_ broadcasts its source and casts dtype into the destination."""
    dst = torch.zeros(3, 4, dtype=torch.int32, device=device)
    r = dst.copy_(torch.tensor([1.7, -2.2, 3.5, 4.9]).to(device))
    return {"dst": dst, "returns_self": r is dst, "dtype": str(dst.dtype)}


@case(SUITE, "inplace_dtype_error", 2)
def inplace_dtype_error(device: str, dtype: str | None) -> dict[str, Any]:
    """An in-place op whose result type cannot be cast to self raises, leaving self."""
    x = torch.arange(4).to(device)
    try:
        x.add_(0.5)
        raised = None
    except RuntimeError as exc:
        raised = type(exc).__name__
    return {"raised": raised, "x": x}


@case(SUITE, "overlapping_inplace_error", 3)
def overlapping_inplace_error(device: str, dtype: str | None) -> dict[str, Any]:
    """Writing in place into an expanded (internally overlapping) tensor raises."""
    x = torch.zeros(1, device=device).expand(4)
    try:
        x.add_(torch.ones(4).to(device))
        raised = None
    except RuntimeError as exc:
        raised = type(exc).__name__
    return {"raised": raised}


CASES = (
    inplace_returns_self,
    inplace_on_view,
    masked_index_inplace,
    copy_broadcast_and_cast,
    inplace_dtype_error,
    overlapping_inplace_error,
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
    return inplace_on_view(device, None)


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
