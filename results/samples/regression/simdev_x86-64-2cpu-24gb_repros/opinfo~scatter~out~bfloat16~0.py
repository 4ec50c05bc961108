"""Repro for TorchCTS case opinfo/scatter/out/bfloat16/0 (torch 2.13.0+cpu)."""
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

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('scatter', ''))
fn = op.op
input, args, kwargs = (torch.tensor([[-0.443359375, -0.4921875, 3.515625, -6.78125, 4.125], [-8.1875, -2.40625, 2.65625, -8.375, 6.90625], [-7.46875, 0.66015625, 4.4375, -8.6875, 5.34375], [-5.4375, -0.51953125, 5.75, -3.890625, -0.78515625], [-3.640625, -0.26953125, 1.4921875, 5.78125, 0.236328125], [-5.90625, -0.220703125, -7.75, 6.34375, 4.75], [-2.046875, 2.5, -3.703125, -1.5703125, -8.5], [6.8125, -3.921875, 8.5, 0.80859375, 2.21875], [3.09375, 4.875, -4.28125, 4.6875, 0.328125], [4.65625, 3.578125, -0.72265625, 1.9296875, -4.3125]], dtype=torch.bfloat16), (0, torch.tensor([[1, 4, 2, 9, 0], [7, 2, 8, 1, 5], [9, 3, 7, 8, 2], [0, 5, 1, 7, 6], [6, 8, 9, 2, 3]], dtype=torch.int64), torch.tensor([[7.46875, -4.875, 2.03125, 7.875, -7.46875], [6.40625, 0.9921875, 5.03125, 4.5, 1.4609375], [-6.25, -4.25, 0.83203125, -1.6953125, -8.3125], [-4.15625, 7.375, -8.9375, 0.91015625, 1.15625], [-5.3125, 4.3125, 6.53125, 0.87109375, 6.6875]], dtype=torch.bfloat16)), {})

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
    cpu_in, cpu_a, cpu_kw = to_dev((input, args, kwargs), 'cpu')
    out = empty_on(op.op(cpu_in, *cpu_a, **cpu_kw), device)
    fn(inp, *a, **kw, out=out)
    return out


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))

