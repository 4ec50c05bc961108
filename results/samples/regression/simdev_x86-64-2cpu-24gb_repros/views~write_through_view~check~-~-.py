"""Repro for TorchCTS case views/write_through_view/check/-/- (torch 2.13.0+cpu)."""
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
"""Views and aliasing: a view shares storage with its base, and writes go through.

Backends that copy instead of aliasing pass value tests and still break every program
that writes through a view; these checks see that directly.
"""


from typing import Any

import torch


SUITE = "views"


@case(SUITE, "view_shares_storage", 1, surfaces=("aten::view",))
def view_shares_storage(device: str, dtype: str | None) -> dict[str, Any]:
    """view(), a slice and t() alias their base and report the right strides."""
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device)
    flat = base.view(12)
    row = base[1]
    tr = base.t()
    return {
        "view_same_storage": storage_id(flat) == storage_id(base),
        "slice_same_storage": storage_id(row) == storage_id(base),
        "t_same_storage": storage_id(tr) == storage_id(base),
        "is_view": [flat._is_view(), row._is_view(), tr._is_view()],
        "row_offset": row.storage_offset(),
        "t_stride": list(tr.stride()),
        "values": tr.contiguous(),
    }


@case(SUITE, "write_through_view", 1, surfaces=("aten::copy_", "aten::fill_"))
def write_through_view(device: str, dtype: str | None) -> dict[str, Any]:
    """A write into a view (fill_, copy_, index assign) is visible in the base."""
    base = torch.zeros(4, 5, device=device)
    base[1].fill_(7.0)
    base[:, 2].copy_(torch.arange(4, dtype=torch.float32).to(device))
    base.view(20)[19] = -1.0
    return {"base": base}


@case(SUITE, "view_chain_offsets", 2, surfaces=("aten::narrow", "aten::select"))
def view_chain_offsets(device: str, dtype: str | None) -> dict[str, Any]:
    """Chained views (narrow, select, unsqueeze, expand) keep offsets and strides."""
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5).to(device)
    v = base.narrow(2, 1, 3).select(0, 2).unsqueeze(0).expand(2, 4, 3)
    v2 = base.transpose(0, 2)[1:, ::2]
    return {
        "offset": v.storage_offset(),
        "stride": list(v.stride()),
        "values": v.contiguous(),
        "v2_offset": v2.storage_offset(),
        "v2_stride": list(v2.stride()),
        "v2_values": v2.contiguous(),
        "same_storage": storage_id(v) == storage_id(base) == storage_id(v2),
    }


@case(SUITE, "as_strided_alias", 3, surfaces=("aten::as_strided",))
def as_strided_alias(device: str, dtype: str | None) -> dict[str, Any]:
    """as_strided reads overlapping windows of the same storage and writes go back."""
    base = torch.arange(10, dtype=torch.float32).to(device)
    windows = base.as_strided((4, 3), (2, 1), 1)
    base[3] = 100.0
    return {
        "windows": windows.contiguous(),
        "same": storage_id(windows) == storage_id(base),
    }


@case(SUITE, "reshape_view_or_copy", 2, surfaces=("aten::reshape",))
def reshape_view_or_copy(device: str, dtype: str | None) -> dict[str, Any]:
    """reshape aliases a contiguous input and copies a non-viewable one."""
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6).to(device)
    aliased = base.reshape(6, 4)
    copied = base.t().reshape(24)
    return {
        "aliased_same": storage_id(aliased) == storage_id(base),
        "copied_same": storage_id(copied) == storage_id(base),
        "copied": copied,
    }


@case(SUITE, "unbind_split_views", 2, surfaces=("aten::unbind", "aten::split"))
def unbind_split_views(device: str, dtype: str | None) -> dict[str, Any]:
    """unbind, split and chunk return views; a write into a piece reaches the base."""
    base = torch.zeros(4, 6, device=device)
    pieces = torch.split(base, 2, dim=1)
    pieces[1].fill_(1.0)
    rows = base.unbind(0)
    rows[3].add_(2.0)
    chunks = base.chunk(3, dim=1)
    return {
        "base": base,
        "all_alias": all(
            storage_id(p) == storage_id(base) for p in (*pieces, *rows, *chunks)
        ),
    }


CASES = (
    view_shares_storage,
    write_through_view,
    view_chain_offsets,
    as_strided_alias,
    reshape_view_or_copy,
    unbind_split_views,
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
    return write_through_view(device, None)


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
