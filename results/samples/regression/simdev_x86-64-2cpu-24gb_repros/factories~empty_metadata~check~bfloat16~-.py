"""Repro for TorchCTS case factories/empty_metadata/check/bfloat16/- (torch 2.13.0+cpu)."""
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
"""Factories on the device: empty, zeros, ones, full, arange, linspace, eye, randn,
the window functions (hann, hamming, blackman, bartlett, kaiser), ..."""


from typing import Any

import torch


SUITE = "factories"
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")


@case(
    SUITE,
    "filled",
    1,
    dtypes=DTYPES,
    surfaces=("aten::zeros", "aten::ones", "aten::full"),
)
def filled(device: str, dtype: str | None) -> dict[str, Any]:
    """zeros, ones, full and *_like create the right values, dtype and device."""
    d = getattr(torch, dtype or "float32")
    z = torch.zeros(2, 3, dtype=d, device=device)
    o = torch.ones(4, dtype=d, device=device)
    f = torch.full((2, 2), 1, dtype=d, device=device)
    zl = torch.zeros_like(f)
    ol = torch.ones_like(z)
    return {
        "zeros": z,
        "ones": o,
        "full": f,
        "zeros_like": zl,
        "ones_like": ol,
        "on_device": z.device.type == torch.device(device).type,
    }


@case(
    SUITE,
    "empty_metadata",
    1,
    dtypes=DTYPES,
    source=ExpectedSource.LEGAL_OUTPUT,
    metadata_only=True,
    surfaces=("aten::empty.memory_format", "aten::empty_strided"),
)
def empty_metadata(device: str, dtype: str | None) -> dict[str, Any]:
    """empty and empty_strided are uninitialised: only shape, dtype and strides count."""
    d = getattr(torch, dtype or "float32")
    return {
        "empty": torch.empty(3, 4, dtype=d, device=device),
        "strided": torch.empty_strided((2, 3), (1, 2), dtype=d, device=device),
        "like": torch.empty_like(torch.zeros(5, 2, dtype=d, device=device)),
    }


@case(
    SUITE,
    "ranges",
    1,
    dtypes=("float32", "int64"),
    surfaces=("aten::arange", "aten::linspace"),
)
def ranges(device: str, dtype: str | None) -> dict[str, Any]:
    """arange with negative steps, linspace, logspace and eye match CPU."""
    d = getattr(torch, dtype or "float32")
    out: dict[str, Any] = {
        "arange": torch.arange(10, dtype=d, device=device),
        "arange_step": torch.arange(10, -3, -3, dtype=d, device=device),
        "eye": torch.eye(3, 4, dtype=d, device=device),
    }
    if d.is_floating_point:
        out["linspace"] = torch.linspace(-1, 1, 9, dtype=d, device=device)
        out["logspace"] = torch.logspace(0, 2, 5, dtype=d, device=device)
        out["arange_frac"] = torch.arange(0, 1, 0.125, dtype=d, device=device)
    return out


@case(SUITE, "tensor_constructor", 1, surfaces=("aten::lift_fresh",))
def tensor_constructor(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.tensor(data, device=...) infers dtypes and keeps values."""
    return {
        "floats": torch.tensor([[1.5, -2.0], [3.25, 0.0]], device=device),
        "ints": torch.tensor([1, 2, 3], device=device),
        "bools": torch.tensor([True, False], device=device),
        "scalar": torch.tensor(3.0, device=device),
    }


@case(
    SUITE,
    "random_factories",
    2,
    source=ExpectedSource.PROPERTY,
    surfaces=("aten::randn", "aten::rand", "aten::randint", "aten::randperm"),
)
def random_factories(device: str, dtype: str | None) -> dict[str, Any]:
    """randn, rand, randint, randperm: right shape and dtype, values in range."""
    torch.manual_seed(0)
    rn = torch.randn(64, device=device)
    r = torch.rand(64, device=device)
    ri = torch.randint(3, 9, (64,), device=device)
    rp = torch.randperm(20, device=device)
    return {
        "randn_shape": list(rn.shape),
        "randn_finite": bool(torch.isfinite(rn).all()),
        "rand_in_range": bool(((r >= 0) & (r < 1)).all()),
        "randint_in_range": bool(((ri >= 3) & (ri < 9)).all()),
        "randint_dtype": str(ri.dtype),
        "randperm_is_perm": bool(torch.equal(rp.sort().values.cpu(), torch.arange(20))),
    }


# lengths 0 and 1 are special-cased by every window (empty, and [1.]); 2 and an odd
# length reach both halves of bartlett's triangle; 64 is a realistic STFT frame
WINDOW_LENGTHS = (0, 1, 2, 7, 64)


@case(
    SUITE,
    "windows",
    2,
    dtypes=("float32", "float64", "float16", "bfloat16"),
    surfaces=(
        "aten::hann_window",
        "aten::hann_window.periodic",
        "aten::hamming_window",
        "aten::hamming_window.periodic",
        "aten::hamming_window.periodic_alpha",
        "aten::hamming_window.periodic_alpha_beta",
        "aten::blackman_window",
        "aten::blackman_window.periodic",
        "aten::bartlett_window",
        "aten::bartlett_window.periodic",
        "aten::kaiser_window",
        "aten::kaiser_window.periodic",
        "aten::kaiser_window.beta",
    ),
)
def windows(device: str, dtype: str | None) -> dict[str, Any]:
    """The window factories, periodic and symmetric, with their shape parameters,
    match CPU (the functions in torch.signal.windows are OpInfo cases)."""
    d = getattr(torch, dtype or "float32")
    out: dict[str, Any] = {}
    for n in WINDOW_LENGTHS:
        made = {
            "hann": torch.hann_window(n, dtype=d, device=device),
            "hann_symmetric": torch.hann_window(n, False, dtype=d, device=device),
            "hamming": torch.hamming_window(n, dtype=d, device=device),
            "hamming_symmetric": torch.hamming_window(n, False, dtype=d, device=device),
            "hamming_alpha": torch.hamming_window(n, True, 0.5, dtype=d, device=device),
            "hamming_alpha_beta": torch.hamming_window(
                n, False, 0.6, 0.4, dtype=d, device=device
            ),
            "blackman": torch.blackman_window(n, dtype=d, device=device),
            "blackman_symmetric": torch.blackman_window(
                n, False, dtype=d, device=device
            ),
            "bartlett": torch.bartlett_window(n, dtype=d, device=device),
            "bartlett_symmetric": torch.bartlett_window(
                n, False, dtype=d, device=device
            ),
            "kaiser": torch.kaiser_window(n, dtype=d, device=device),
            "kaiser_symmetric": torch.kaiser_window(n, False, dtype=d, device=device),
            "kaiser_beta": torch.kaiser_window(n, True, 8.0, dtype=d, device=device),
        }
        out |= {f"{name}[{n}]": w for name, w in made.items()}
    out["on_device"] = all(
        isinstance(w, torch.Tensor) and w.device.type == torch.device(device).type
        for w in out.values()
    )
    return out


CASES = (filled, empty_metadata, ranges, tensor_constructor, random_factories, windows)

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [1e-05, 1.3e-05], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
METADATA_ONLY = True
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
    return empty_metadata(device, 'bfloat16')


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
