"""The judging half of a standalone repro script: run the case on CPU and on the
device, compare the two the way TorchCTS did (same tolerances, metadata only where
TorchCTS compared metadata only), print the first difference and exit 1.

The script needs torch and the backend only. Exit status: 0 when the device matches
CPU (the failure no longer reproduces), 1 when it differs or raises where CPU does
not (the exception's traceback is the output), as a test would.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from torchcts_cases.tolerances import DEFAULT_TOLERANCES

Tolerance = Callable[[str], tuple[float, float]]

# every repro's helpers; DEVICE, TOLERANCES and METADATA_ONLY are set above them
RUNTIME = """
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
"""


def settings_block(
    device: str,
    tol: Tolerance,
    metadata_only: bool,
    strides: bool = True,
    pinned: frozenset[int] = frozenset(),
) -> str:
    """``DEVICE``, ``TOLERANCES`` (per dtype, as TorchCTS judged), ``METADATA_ONLY``,
    ``JUDGE_STRIDES`` (whether a metadata comparison judges strides) and
    ``CPU_PINNED`` (positions of the input tensors that stay on the CPU) for the
    runtime above."""
    table = {name: list(tol(name)) for name in DEFAULT_TOLERANCES}
    table |= {n: list(tol(n)) for n in ("int64", "int32", "bool") if any(tol(n))}
    return (
        f"DEVICE = {device!r}\n"
        f"TOLERANCES = {json.dumps(table, sort_keys=True)}  # (atol, rtol) per dtype\n"
        f"METADATA_ONLY = {metadata_only!r}\n"
        f"JUDGE_STRIDES = {strides!r}\n"
        f"CPU_PINNED = {tuple(sorted(pinned))!r}\n"
    )


def opinfo_run_block(variant: str, out_names: tuple[str, ...] | None = None) -> str:
    """``run(device)``: the OpInfo call of one variant on copies of the inputs;
    `out_names`: the schema names an out= call passes its outputs by, when not
    ``out=`` (`torchcts_cases.out_call`)."""
    lines = [
        "",
        "def run(device):",
        "    inp, a, kw = to_dev((input, args, kwargs), device)",
    ]
    if variant == "noncontiguous":
        lines += [
            "    from torch.testing._internal.common_utils import noncontiguous_like",
            "    def nc(x):",
            "        if isinstance(x, torch.Tensor):",
            "            with torch.no_grad():",
            "                y = noncontiguous_like(x)",
            "            return y.requires_grad_(x.requires_grad)",
            "        if isinstance(x, (list, tuple)):",
            "            return type(x)(nc(v) for v in x)",
            "        if isinstance(x, dict):",
            "            return {k: nc(v) for k, v in x.items()}",
            "        return x",
            "    inp, a, kw = nc((inp, a, kw))",
        ]
    if variant == "out":
        lines += [
            "    cpu_in, cpu_a, cpu_kw = to_dev((input, args, kwargs), 'cpu')",
            "    out = empty_on(op.op(cpu_in, *cpu_a, **cpu_kw), device)",
            f"    fn(inp, *a, **kw, **dict(zip({out_names!r}, out)))"
            if out_names
            else "    fn(inp, *a, **kw, out=out)",
            "    return out",
        ]
    elif variant == "inplace":
        lines += [
            "    result = fn(inp, *a, **kw)",
            "    return {'output': result, 'self': inp}",
        ]
    elif variant == "backward":
        lines += [
            "    result = fn(inp, *a, **kw)",
            "    flat = result if isinstance(result, (list, tuple)) else [result]",
            "    outs = [t for t in flat if isinstance(t, torch.Tensor) and t.requires_grad]",
            "    leaves = [t for t in [inp, *a] if isinstance(t, torch.Tensor)"
            " and t.requires_grad]",
            "    loss = sum((t.real.sum() + t.imag.sum()) if t.is_complex() else t.sum()"
            " for t in outs)",
            "    grads = torch.autograd.grad(loss, leaves, allow_unused=True)",
            "    return {'output': result, 'grads': list(grads)}",
        ]
    else:
        lines += ["    return fn(inp, *a, **kw)"]
    lines += [
        "",
        "",
        "expected = outcome(run, 'cpu')",
        "judge(expected, outcome(run, DEVICE, expected))",
    ]
    return "\n".join(lines) + "\n"
