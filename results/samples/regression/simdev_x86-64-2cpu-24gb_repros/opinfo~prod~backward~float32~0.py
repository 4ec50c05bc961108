"""Repro for TorchCTS case opinfo/prod/backward/float32/0 (torch 2.13.0+cpu)."""
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

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('prod', ''))
fn = op.op
input, args, kwargs = (torch.tensor([[[0.9931049346923828, -0.7516798973083496, 0.26576244831085205, 0.4729570150375366, 0.6954560279846191], [0.2267369031906128, 0.9275554418563843, -0.4647200107574463, 0.31219518184661865, -0.7082284688949585], [0.8769131898880005, -0.5238867998123169, -0.8660496473312378, -0.43035149574279785, -0.06600701808929443], [0.9699447154998779, -0.8192664384841919, -0.22836148738861084, 0.5922900438308716, 0.7868561744689941], [0.5642555952072144, 0.12382423877716064, 0.23286211490631104, 0.9625464677810669, 0.1375889778137207]], [[-0.2792847156524658, -0.9233458042144775, -0.09320449829101562, 0.21510028839111328, -0.8740391731262207], [0.3168264627456665, -0.9606558084487915, 0.18878185749053955, -0.6660884618759155, -0.040171027183532715], [0.5720442533493042, -0.09988009929656982, 0.5017821788787842, 0.9046907424926758, -0.04174935817718506], [0.6121630668640137, -0.4593743085861206, 0.843390941619873, 0.03300964832305908, -0.8033871650695801], [0.8984895944595337, -0.02254009246826172, 0.8233712911605835, 0.47947728633880615, 0.23174870014190674]], [[-0.18857896327972412, 0.20692193508148193, -0.20776605606079102, 0.018990397453308105, -0.8667608499526978], [0.7223649024963379, -0.7736945152282715, -0.43612706661224365, -0.052113890647888184, 0.6000522375106812], [0.44979798793792725, 0.5194981098175049, 0.08925759792327881, 0.18683063983917236, 0.4176981449127197], [0.6880944967269897, 0.9793554544448853, 0.3767096996307373, -0.42099928855895996, 0.9335389137268066], [0.7534672021865845, 0.6436237096786499, -0.7587053775787354, -0.7358694076538086, 0.5860096216201782]], [[-0.7589006423950195, -0.029469013214111328, 0.7429043054580688, -0.9565951824188232, -0.3920668363571167], [0.9404398202896118, 0.9065366983413696, 0.9310672283172607, -0.19686686992645264, 0.36139655113220215], [0.012925386428833008, 0.8258055448532104, 0.49802887439727783, 0.3931344747543335, -0.8131781816482544], [0.4428532123565674, -0.27251744270324707, 0.08678317070007324, 0.2157834768295288, 0.19610369205474854], [0.12693393230438232, 0.5602245330810547, 0.4426978826522827, 0.5228935480117798, -0.08200323581695557]], [[0.40442538261413574, -0.23277199268341064, 0.8608806133270264, -0.3934592008590698, 0.20192170143127441], [0.354994535446167, -0.2143915891647339, -0.3272221088409424, -0.35750389099121094, 0.9971824884414673], [-0.07396745681762695, -0.7978607416152954, -0.7216722965240479, 0.051261186599731445, 0.3775283098220825], [-0.5928457975387573, 0.9330536127090454, 0.05013298988342285, -0.8406684398651123, 0.22734558582305908], [-0.11316454410552979, 0.3259918689727783, -0.39115869998931885, 0.21931636333465576, 0.7913506031036377]]], dtype=torch.float32).requires_grad_(True), (), {})

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

