"""Repro for TorchCTS case opinfo/min.reduction_no_dim/backward/float32/0 (torch 2.13.0+cpu)."""
import json
import torch
import torchcts_simdev
_configure = getattr(torchcts_simdev, 'torchcts_configure', None)
if _configure is not None:
    _configure(json.loads("{\"fault_profile\": \"demo\"}"))

from torch.testing._internal.common_methods_invocations import op_db as op_db

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [1e-05, 1.3e-05], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
METADATA_ONLY = True
JUDGE_STRIDES = True
CPU_PINNED = ()

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('min', 'reduction_no_dim'))
fn = op.op
input, args, kwargs = (torch.tensor([[[7.723994731903076, 6.821723461151123, 2.7523293495178223, -7.335854530334473, -1.4582022428512573], [-3.8020215034484863, -4.970527172088623, -7.76210880279541, 0.5306353569030762, 6.544280052185059], [-4.815149784088135, -3.1973915100097656, -7.371403694152832, -0.5523355007171631, 8.123390197753906], [6.055414199829102, -3.627955913543701, 4.908770561218262, -7.138751983642578, -4.840139389038086], [2.3790035247802734, 0.4107534885406494, 4.513227462768555, 1.6348793506622314, -5.529298782348633]], [[3.065464496612549, -7.407539367675781, 7.751517295837402, 1.7498763799667358, 6.4187493324279785], [3.6826610565185547, 3.3048410415649414, -4.11449670791626, 0.6760915517807007, -4.907792091369629], [-8.89646053314209, -5.74062442779541, -2.5414509773254395, 5.309667587280273, -3.898751735687256], [-6.22740364074707, 7.401122093200684, 4.088598251342773, -2.536555290222168, -0.16967976093292236], [8.968705177307129, -7.25022029876709, 5.039486885070801, -6.186951637268066, -8.930045127868652]], [[5.334107875823975, 3.1372694969177246, 1.4519054889678955, -2.8858542442321777, 4.128300666809082], [-7.762281894683838, -8.851595878601074, 8.570697784423828, -6.2372517585754395, -8.725528717041016], [-4.767994403839111, 6.3809814453125, 6.699898719787598, -5.542513370513916, -4.106208801269531], [3.6109604835510254, 4.577742099761963, 5.602001667022705, -6.147556304931641, 1.5686588287353516], [5.752612113952637, -2.05564284324646, 4.514169692993164, 2.375180721282959, -0.9584112167358398]], [[-6.013294696807861, 2.446122169494629, -5.014185905456543, -4.828965187072754, -7.663142204284668], [-2.2208423614501953, -6.370194911956787, -7.955779552459717, 6.537001609802246, 7.571657180786133], [7.1898040771484375, -0.588592529296875, 1.1717466115951538, -0.9450463056564331, 0.1576613187789917], [-1.905530333518982, -1.0848709344863892, 4.840109348297119, -3.8098161220550537, 7.374641418457031], [-7.386229515075684, 6.773184776306152, -8.688713073730469, 5.099453449249268, 1.2272007465362549]], [[-4.294432163238525, 5.036760330200195, -8.827017784118652, 2.971193313598633, 3.3628528118133545], [-6.462974548339844, -3.3976871967315674, -4.517366886138916, -6.261565208435059, -1.2748957872390747], [-3.8255863189697266, 3.438143491744995, -6.966125965118408, 6.393457412719727, -7.793282508850098], [3.8308286666870117, -3.39031982421875, 7.734694480895996, 7.804448127746582, -4.658856391906738], [5.338754653930664, 4.230882167816162, -0.5718652009963989, 3.0778305530548096, -5.474477767944336]]], dtype=torch.float32).requires_grad_(True), (), {})

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
    result = fn(inp, *a, **kw)
    flat = result if isinstance(result, (list, tuple)) else [result]
    outs = [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]
    leaves = [t for t in [inp, *a] if isinstance(t, torch.Tensor) and t.requires_grad]
    loss = sum((t.real.sum() + t.imag.sum()) if t.is_complex() else t.sum() for t in outs)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return {'output': result, 'grads': list(grads)}


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))

