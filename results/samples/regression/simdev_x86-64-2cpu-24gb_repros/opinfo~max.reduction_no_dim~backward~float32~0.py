"""Repro for TorchCTS case opinfo/max.reduction_no_dim/backward/float32/0 (torch 2.13.0+cpu)."""
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

op = next(o for o in op_db if (o.name, o.variant_test_name) == ('max', 'reduction_no_dim'))
fn = op.op
input, args, kwargs = (torch.tensor([[[-3.735802173614502, -7.494553565979004, -2.4304986000061035, 2.333479881286621, -0.009398460388183594], [8.48335075378418, 3.1177847385406494, -2.492492198944092, -4.542126655578613, 8.413311004638672], [-3.776566505432129, 6.458510398864746, 7.043590545654297, 1.2274796962738037, -4.644932746887207], [7.57575798034668, -7.3822150230407715, -4.873039245605469, 1.062853217124939, -8.0636568069458], [6.122991561889648, 1.3516337871551514, 2.54848051071167, 4.01247501373291, -0.6001496315002441]], [[0.40528929233551025, 0.8002188205718994, -5.743110656738281, -4.850010871887207, -7.138508319854736], [-2.2241058349609375, 4.4456787109375, 2.4654059410095215, -8.488018035888672, -5.610116958618164], [-0.055562496185302734, 5.307641983032227, 5.464761734008789, -8.497537612915039, 0.3600039482116699], [-4.250514984130859, 3.6276962757110596, -5.6381425857543945, 8.164687156677246, -2.590771436691284], [8.774177551269531, 4.075751781463623, -5.325576305389404, 3.21669602394104, -8.239890098571777]], [[3.9199304580688477, -2.2738170623779297, -1.5955710411071777, 4.378650665283203, -2.321134328842163], [-0.15821921825408936, 3.889286756515503, 2.688230037689209, 0.15533208847045898, -1.8837990760803223], [-0.4135483503341675, 0.832813024520874, 0.34303200244903564, 5.238979816436768, -3.208685874938965], [6.5139312744140625, -1.7446449995040894, 3.9349775314331055, -5.689266681671143, 1.2992534637451172], [-6.791743755340576, 2.550107955932617, -2.0996804237365723, -4.679581642150879, -5.256717681884766]], [[5.974241733551025, -5.029697418212891, -1.0821597576141357, -4.271177291870117, 2.597932815551758], [-0.6637383699417114, 7.1440839767456055, -8.375885009765625, 3.6799683570861816, 5.398690223693848], [4.307806015014648, 2.3142614364624023, -8.327705383300781, 0.5046994686126709, 4.505880355834961], [7.922006130218506, 6.953243732452393, -6.813477039337158, 5.719279766082764, -5.513736724853516], [5.552396774291992, 8.785391807556152, 7.636106491088867, -7.952389240264893, -8.71158218383789]], [[2.3471195697784424, -8.325862884521484, 6.504659652709961, 7.45518159866333, -7.47269344329834], [8.507694244384766, -5.567913055419922, 6.371266841888428, -6.345217227935791, 5.476478576660156], [3.0993642807006836, -0.712437629699707, 2.0906918048858643, -8.041990280151367, 1.6885331869125366], [5.368452072143555, -1.4404953718185425, 8.859065055847168, -5.900927543640137, -3.9826974868774414], [-7.0060224533081055, 4.981510162353516, 6.225366592407227, 2.3726327419281006, -0.04980969429016113]]], dtype=torch.float32).requires_grad_(True), (), {})

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

