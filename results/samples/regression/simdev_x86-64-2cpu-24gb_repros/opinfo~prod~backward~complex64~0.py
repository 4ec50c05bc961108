"""Repro for TorchCTS case opinfo/prod/backward/complex64/0 (torch 2.13.0+cpu)."""
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
input, args, kwargs = (torch.view_as_complex(torch.tensor([[[[-0.4939751625061035, -0.6379972696304321], [0.06175220012664795, 0.7793822288513184], [-0.11802089214324951, 0.8898988962173462], [0.2633453607559204, -0.5893831253051758], [-0.8963465690612793, 0.04113936424255371]], [[-0.9364317655563354, 0.3288377523422241], [0.985245943069458, -0.661834716796875], [-0.5960031747817993, 0.6109143495559692], [-0.04048645496368408, 0.2493060827255249], [0.9600362777709961, 0.5794730186462402]], [[0.1146012544631958, 0.19159364700317383], [-0.44471275806427, -0.6641521453857422], [0.7868517637252808, 0.8735017776489258], [0.2111198902130127, -0.98225998878479], [-0.30881571769714355, 0.9706286191940308]], [[0.13940024375915527, 0.3046693801879883], [-0.9949109554290771, -0.2994260787963867], [0.8525383472442627, -0.7157025337219238], [-0.9276025295257568, 0.9960678815841675], [0.21303975582122803, -0.36979854106903076]], [[-0.2579895257949829, 0.27500200271606445], [-0.08438241481781006, 0.6476386785507202], [0.9745787382125854, -0.3589138984680176], [-0.7536382675170898, 0.9165561199188232], [0.17875003814697266, 0.6878440380096436]]], [[[-0.961113691329956, -0.05291128158569336], [-0.8415460586547852, -0.8097267150878906], [-0.8169536590576172, -0.9937725067138672], [-0.41640520095825195, 0.2729973793029785], [-0.17713117599487305, 0.668076753616333]], [[0.22062551975250244, 0.08411526679992676], [0.4124256372451782, 0.6118394136428833], [-0.24744093418121338, 0.31226396560668945], [0.1639465093612671, -0.6434507369995117], [0.9232641458511353, 0.12950539588928223]], [[0.6402895450592041, -0.817989706993103], [0.5476385354995728, -0.7449605464935303], [0.8793026208877563, 0.5681784152984619], [-0.6894283294677734, 0.2887197732925415], [-0.7822602987289429, -0.8612687587738037]], [[0.6100679636001587, -0.1508578062057495], [0.28835248947143555, 0.3861018419265747], [-0.08328449726104736, 0.6526056528091431], [0.13529860973358154, -0.03462707996368408], [0.5454093217849731, 0.49298155307769775]], [[-0.5909430980682373, 0.14059877395629883], [-0.6794000864028931, -0.47953641414642334], [-0.9268038272857666, 0.7842826843261719], [-0.24357593059539795, 0.5270463228225708], [-0.4077717065811157, -0.9460647106170654]]], [[[0.8026446104049683, -0.15407228469848633], [0.7491468191146851, 0.5908287763595581], [-0.7502609491348267, 0.1930866241455078], [-0.46129167079925537, 0.1622622013092041], [0.27788448333740234, 0.4756368398666382]], [[-0.596358060836792, 0.4211537837982178], [-0.5261540412902832, 0.47024989128112793], [-0.11896276473999023, -0.0812537670135498], [-0.8912005424499512, -0.23188185691833496], [0.38957810401916504, 0.021568894386291504]], [[-0.33879804611206055, -0.15621483325958252], [0.33776915073394775, -0.9271594285964966], [-0.23555827140808105, -0.6227560043334961], [0.9193625450134277, 0.22565019130706787], [-0.08926880359649658, 0.3891620635986328]], [[0.9828178882598877, 0.9997258186340332], [-0.49650824069976807, 0.7464853525161743], [-0.13709783554077148, -0.5732361078262329], [0.8438224792480469, 0.43243908882141113], [0.9005370140075684, 0.3795965909957886]], [[0.0023345947265625, 0.04643881320953369], [-0.9240906238555908, 0.613659143447876], [0.2774355411529541, 0.41001129150390625], [-0.08065581321716309, -0.24006593227386475], [0.2612643241882324, -0.41246557235717773]]], [[[-0.4939826726913452, -0.1684356927871704], [0.6843407154083252, -0.13818728923797607], [-0.9977995157241821, -0.9046370983123779], [-0.8864355087280273, 0.1401991844177246], [0.9992365837097168, 0.437228798866272]], [[-0.1870044469833374, -0.9067631959915161], [-0.9827264547348022, 0.646314263343811], [0.583451509475708, -0.387797474861145], [0.5621135234832764, -0.11121261119842529], [-0.6169915199279785, -0.6697186231613159]], [[0.6435827016830444, 0.5947322845458984], [0.19919657707214355, -0.6097965240478516], [-0.45938658714294434, -0.8918486833572388], [0.031653642654418945, -0.9589037895202637], [-0.594973087310791, -0.8000433444976807]], [[-0.9504520893096924, 0.541982889175415], [-0.5743778944015503, 0.5183779001235962], [0.030734539031982422, 0.14852237701416016], [-0.46827638149261475, -0.11375737190246582], [0.680640697479248, 0.8783760070800781]], [[0.15559077262878418, -0.4133063554763794], [0.4616643190383911, -0.7347866296768188], [-0.031093358993530273, -0.6236608028411865], [0.7802051305770874, 0.8464057445526123], [0.1437298059463501, 0.30211544036865234]]], [[[0.9639179706573486, 0.6970643997192383], [-0.6649909019470215, -0.7755753993988037], [0.78273606300354, -0.0670706033706665], [0.3637455701828003, 0.25483477115631104], [-0.6471699476242065, -0.640343427658081]], [[0.8433965444564819, -0.8493448495864868], [-0.9455642700195312, 0.5708703994750977], [-0.2029428482055664, 0.23094701766967773], [0.4286719560623169, 0.5070282220840454], [0.9001480340957642, 0.8898556232452393]], [[0.13057076930999756, 0.2156292200088501], [0.8887701034545898, 0.7051601409912109], [0.05357694625854492, -0.3596862554550171], [-0.7174253463745117, -0.15085768699645996], [0.8549656867980957, -0.11771202087402344]], [[-0.20341002941131592, 0.3357226848602295], [-0.23167872428894043, -0.9458415508270264], [-0.6432943344116211, -0.05302560329437256], [0.7233121395111084, -0.400510311126709], [0.9012839794158936, -0.9034725427627563]], [[-0.7798404693603516, -0.9564622640609741], [-0.6703062057495117, -0.05003082752227783], [-0.8369172811508179, 0.9474762678146362], [0.9080930948257446, -0.41066932678222656], [0.9674150943756104, -0.810936450958252]]]], dtype=torch.float32)).requires_grad_(True), (), {})

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

