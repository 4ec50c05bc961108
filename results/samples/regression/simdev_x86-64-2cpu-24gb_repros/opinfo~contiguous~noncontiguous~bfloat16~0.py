"""Repro for TorchCTS case opinfo/contiguous/noncontiguous/bfloat16/0 (torch 2.13.0+cpu)."""
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

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('contiguous', ''))
fn = op.op
input, args, kwargs = (torch.tensor([[[5.71875, 5.5625, 3.578125, -8.4375, -2.78125], [8.4375, -7.125, 6.9375, -7.15625, -8.4375], [-3.84375, -3.875, -2.625, 1.3203125, -0.796875], [-5.09375, -7.875, 5.71875, 3.296875, 3.1875], [6.59375, -2.484375, 4.40625, 2.203125, -5.1875], [7.53125, -2.375, -8.0625, -7.03125, -6.3125], [4.125, 3.734375, -4.78125, -3.25, -2.71875], [6.03125, 2.109375, 7.4375, 1.6171875, -2.3125], [1.46875, 1.8046875, -9.0, -3.75, 1.6875], [4.34375, 1.5703125, -6.90625, -6.0, -0.77734375]], [[-3.1875, -4.84375, -5.40625, -5.5, -7.28125], [0.6484375, -6.53125, -0.412109375, -8.9375, 8.5625], [-3.234375, -8.3125, -4.09375, -2.390625, 6.75], [7.375, -0.412109375, -6.40625, 8.5625, 1.4140625], [-8.5625, 0.392578125, -3.015625, -6.78125, -2.546875], [-2.234375, -3.9375, 8.8125, -4.5625, -8.375], [5.71875, 3.828125, 7.25, 7.96875, 0.9296875], [3.984375, -0.09814453125, 6.28125, 5.40625, -6.90625], [3.4375, 0.09716796875, 6.34375, 7.9375, -6.0625], [-2.359375, -3.390625, -5.03125, 2.484375, 8.4375]], [[6.46875, -1.6953125, 8.75, 5.5, -6.53125], [-0.48828125, -6.53125, -6.875, 1.6640625, -6.84375], [1.4765625, -5.625, -3.328125, 1.7265625, -1.1796875], [-6.84375, 8.8125, 8.0, 5.9375, 0.0830078125], [5.125, -6.5, 4.5, -5.0625, 7.78125], [5.28125, -7.59375, -6.59375, -8.625, -3.9375], [-7.125, -7.90625, 8.0625, 3.5625, -7.34375], [-7.4375, 6.6875, 7.78125, -6.46875, -7.59375], [4.0625, 6.25, 0.5625, -8.3125, -6.3125], [-0.53125, -4.25, -1.625, -5.96875, -6.0625]], [[3.203125, -5.09375, 4.3125, 7.46875, 4.59375], [0.234375, -0.294921875, -6.21875, 5.65625, 7.3125], [-8.75, 3.8125, -2.546875, -5.625, 4.0625], [5.3125, 4.0, 7.59375, -6.15625, -2.484375], [7.5625, -2.015625, 5.46875, 8.8125, 6.28125], [-7.84375, 5.9375, -0.80078125, 2.5625, 6.0625], [1.015625, -5.125, 0.59765625, 2.28125, -1.671875], [-0.388671875, -6.03125, -5.28125, 6.59375, 2.40625], [-3.015625, -3.890625, 0.40234375, -1.9140625, -6.90625], [2.515625, 0.61328125, 4.21875, 1.34375, 5.8125]], [[-2.734375, 2.203125, -3.984375, 6.5625, 1.171875], [-4.125, 1.453125, 1.7109375, -6.75, 2.09375], [-6.90625, 1.2265625, -3.234375, 1.171875, 8.25], [-1.28125, -0.53125, -5.125, -5.0625, 5.9375], [-8.75, -1.40625, -7.71875, 5.25, 0.205078125], [-8.5625, 8.875, 4.8125, 8.375, -1.4609375], [-4.1875, 4.09375, -3.03125, 1.6640625, -3.96875], [-5.0, -7.8125, -2.84375, -5.90625, -3.375], [1.6953125, 0.255859375, 0.2431640625, 6.75, 6.78125], [-1.34375, -8.3125, -4.84375, -2.46875, -8.0625]]], dtype=torch.bfloat16), (), {})

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

