"""Repro for TorchCTS case opinfo/view_as/noncontiguous/bfloat16/0 (torch 2.13.0+cpu)."""
import json
import torch
import torchcts_simdev
_configure = getattr(torchcts_simdev, 'torchcts_configure', None)
if _configure is not None:
    _configure(json.loads("{\"fault_profile\": \"demo\"}"))

from torch.testing._internal.common_methods_invocations import op_db as op_db

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [1e-05, 1.3e-05], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
METADATA_ONLY = False
JUDGE_STRIDES = True
CPU_PINNED = ()

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('view_as', ''))
fn = op.op
input, args, kwargs = (torch.tensor([[[-2.140625, 1.0390625, -4.84375, -1.7421875, -3.578125], [-5.96875, 7.90625, 1.1015625, -3.171875, 5.78125], [-0.1865234375, 5.5625, 1.3125, 8.75, -1.3125], [-8.625, 2.53125, 7.53125, 8.75, -3.65625], [1.015625, 5.0625, 7.65625, 3.390625, 2.796875]], [[-8.3125, 3.296875, -5.21875, 6.625, 4.375], [5.71875, 6.0, 0.29296875, -4.78125, -3.9375], [-1.4921875, 1.671875, 4.375, 8.875, 7.1875], [2.125, -5.8125, -2.125, -5.8125, -0.1923828125], [-7.75, -2.484375, -0.80859375, -8.0625, -4.40625]], [[-0.9609375, 0.12890625, -6.96875, -5.4375, -6.28125], [-6.53125, 3.15625, -6.1875, -2.640625, 6.9375], [-7.03125, -6.34375, -2.578125, 3.078125, -8.5], [4.90625, -0.609375, 0.64453125, -3.984375, -6.84375], [4.625, -5.0625, 0.05029296875, 6.0625, 7.6875]], [[2.28125, -7.0625, 6.09375, -7.125, 6.125], [8.375, -8.25, -6.84375, -5.03125, -4.59375], [8.125, -4.25, -7.9375, 5.40625, 2.109375], [-7.71875, -2.203125, -6.5625, -3.703125, -0.138671875], [5.53125, -0.6328125, -2.890625, 1.796875, 8.75]], [[-2.6875, 0.8046875, -1.4140625, 2.828125, 4.40625], [-5.71875, -1.6171875, -8.5, -4.46875, 6.6875], [4.125, 5.90625, 8.9375, 1.1953125, -2.46875], [-0.77734375, 0.54296875, -3.578125, -3.140625, 8.8125], [-0.0654296875, 6.78125, -7.3125, 1.34375, 6.6875]]], dtype=torch.bfloat16), (torch.tensor([[-4.90625, -7.0625, -3.984375, -0.57421875, -3.0625], [6.03125, -0.9296875, 4.1875, -4.78125, -6.5], [-1.625, 8.0, -5.75, -8.25, 2.671875], [0.5625, 4.9375, -1.703125, 7.28125, -2.328125], [2.640625, -5.375, -5.53125, -0.396484375, 8.25], [-1.4609375, -4.40625, -7.0, -3.359375, -6.9375], [6.03125, 5.40625, -2.84375, 2.609375, 7.0625], [-4.25, 6.9375, 0.90234375, -7.625, -4.09375], [-2.421875, 5.78125, 7.875, -7.3125, -3.5625], [2.0625, 6.375, -6.625, -7.84375, -2.1875], [3.953125, -6.28125, 2.625, -1.1953125, 1.1484375], [2.40625, 5.5, 5.71875, -3.21875, -3.109375], [-2.890625, -4.59375, -6.4375, -3.78125, 5.1875], [2.28125, -2.765625, -2.203125, 4.28125, 1.5859375], [-4.65625, -6.875, -5.03125, -7.46875, 8.6875], [-3.765625, -7.4375, 2.234375, 5.25, -1.90625], [1.671875, -5.53125, -3.375, -2.015625, -6.65625], [2.75, -8.0, 2.765625, -1.7578125, 2.71875], [-5.5625, -5.75, -0.73828125, -6.9375, 4.78125], [-6.875, -3.921875, -3.171875, -5.03125, 7.5625], [5.96875, -1.8828125, 2.6875, -0.27734375, -2.78125], [7.90625, 3.21875, 1.3359375, 0.1884765625, -4.6875], [7.8125, -2.421875, 2.203125, 7.25, -4.75], [8.1875, -5.1875, -7.09375, 7.75, -1.703125], [-0.9453125, -8.4375, 5.8125, -7.1875, -3.375]], dtype=torch.bfloat16),), {})

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
    inp, a, kw = to_dev((input, args, kwargs), device)
    from torch.testing._internal.common_utils import noncontiguous_like
    def nc(x):
        if isinstance(x, torch.Tensor):
            with torch.no_grad():
                y = noncontiguous_like(x)
            return y.requires_grad_(x.requires_grad)
        if isinstance(x, (list, tuple)):
            return type(x)(nc(v) for v in x)
        if isinstance(x, dict):
            return {k: nc(v) for k, v in x.items()}
        return x
    inp, a, kw = nc((inp, a, kw))
    return fn(inp, *a, **kw)


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))

