"""Standalone repro scripts: torch and the backend module only, never torchcts.

Small inputs are written as literals; otherwise the script replays PyTorch's own OpInfo
sample generator from the seeds TorchCTS uses, which rebuilds the inputs exactly (for a
nonfinite case, then writes the NaN and Inf TorchCTS placed, one line each). The
script then judges the device against CPU as TorchCTS did (`repro_check`): it prints
the first difference and exits 1 while the failure reproduces.
"""

from __future__ import annotations

import json
import math
from typing import Any, Protocol

import torch

from torchcts_cases.legal import strides_are_contract
from torchcts_cases.nonfinite import NonfiniteSample, expression
from torchcts_cases.opinfo_source import generation_seed, list_name
from torchcts_cases.repro_check import RUNTIME, opinfo_run_block, settings_block
from torchcts_cases.spec import CaseSpec, case_seed

LITERAL_MAX_NUMEL = 256


class _OpInfoLike(Protocol):
    spec: CaseSpec
    op: Any
    mode: str | None
    built_from: int

    def sample(self) -> Any: ...
    def cpu_pinned(self) -> frozenset[int]: ...
    def tolerance(self, dtype: str) -> tuple[float, float]: ...
    def out_names(self) -> tuple[str, ...] | None: ...


def header(spec: CaseSpec, backend_import: str | None, options: dict[str, Any]) -> str:
    """The common top of a repro: docstring, imports, backend configuration."""
    lines = [
        f'"""Repro for TorchCTS case {spec.case_id} (torch {torch.__version__})."""',
        "import torch",
    ]
    if backend_import:
        lines.append(f"import {backend_import}")
        if options:
            lines += [
                f"_configure = getattr({backend_import}, 'torchcts_configure', None)",
                "if _configure is not None:",
                f"    _configure(json.loads({json.dumps(json.dumps(options))}))",
            ]
            lines.insert(1, "import json")
    return "\n".join(lines) + "\n"


def opinfo_repro(
    case: _OpInfoLike, device: str, backend_import: str | None, options: dict[str, Any]
) -> str:
    """The repro of an OpInfo case."""
    spec = case.spec
    op = case.op
    fn = {"method": "op.method_variant", "inplace": "op.inplace_variant"}.get(
        spec.variant, "op.op"
    )
    db = list_name(op)  # op_db, or the foreach list of a _foreach_ op
    lines = [
        header(spec, backend_import, options),
        f"from torch.testing._internal.common_methods_invocations import {db} as op_db",
        "",
        # a legal-output op has more than one right answer: compare its metadata
        settings_block(
            device,
            case.tolerance,
            device == "meta" or bool(case.mode),
            device == "meta"
            or case.mode != "metadata"
            or strides_are_contract(spec.op, spec.variant),
            case.cpu_pinned(),
        ),
        f"op = next(o for o in op_db if (o.name, o.variant_test_name) == "
        f"({op.name!r}, {op.variant_test_name!r}))",
        f"fn = {fn}",
    ]
    sample = case.sample()
    literal = _sample_literal(sample)
    if literal is not None:
        lines.append(f"input, args, kwargs = {literal}")
    else:
        gen = (
            'op.error_inputs_func(op, "cpu")'
            if spec.variant == "error_inputs"
            else f'op.sample_inputs_func(op, "cpu", torch.{spec.dtype}, '
            f"{spec.variant == 'backward'})"
        )
        stream = (
            "errors"
            if spec.variant == "error_inputs"
            else f"{spec.dtype}:grad"
            if spec.variant == "backward"
            else str(spec.dtype)
        )
        lines += [
            "import random",
            "import numpy",
            "",
            "def seed_everything(seed):",
            "    torch.manual_seed(seed)",
            "    random.seed(seed)",
            "    numpy.random.seed(seed)",
            "",
            "# the generator replays the draws TorchCTS counted, then the case seed",
            f"seed_everything({generation_seed(spec.op, stream)})",
            f"item = [s for i, s in zip(range({case.built_from + 1}), {gen})][-1]",
            f"seed_everything({case_seed(spec.case_id)})",
            "sample = getattr(item, 'sample_input', item)",
            "input, args, kwargs = sample.input, sample.args, sample.kwargs",
        ]
        lines += _placement_lines(sample)
    names = case.out_names() if spec.variant == "out" else None
    lines += [RUNTIME, opinfo_run_block(spec.variant, names)]
    return "\n".join(lines) + "\n"


def _placement_lines(sample: Any) -> list[str]:
    """The non-finite values of a nonfinite case, written into the rebuilt sample."""
    if not isinstance(sample, NonfiniteSample):
        return []
    lines = [
        "",
        "# the NaN and Inf TorchCTS placed (first, middle, last element of each",
        "# floating input; torchcts_cases.nonfinite)",
        "with torch.no_grad():",
    ]
    for placement in sample.placements:
        target = expression(placement.path)
        lines.append(f"    {target}[{placement.index!r}] = float({placement.value!r})")
    return lines


def _sample_literal(sample: Any) -> str | None:
    """Literal source for small samples without aliasing (literals would lose it)."""
    parts = (sample.input, sample.args, sample.kwargs)
    tensors = [t for t in _tensors(parts) if isinstance(t, torch.Tensor)]
    if sum(t.numel() for t in tensors) > LITERAL_MAX_NUMEL:
        return None
    if len({id(t) for t in tensors}) < len(tensors) or any(
        t._base is not None for t in tensors
    ):
        return None
    try:
        return literal(parts)
    except TypeError:
        return None


def _tensors(obj: Any) -> list[Any]:
    if isinstance(obj, list | tuple):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return [obj]


def literal(obj: Any) -> str:
    """Python source that rebuilds `obj` (tensors by value); TypeError if it cannot."""
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided or obj.is_quantized:
            raise TypeError("not a dense tensor")
        dtype = str(obj.dtype)
        values = obj.detach().to("cpu")
        if values.is_complex():
            data = literal(torch.view_as_real(values).tolist())
            text = f"torch.view_as_complex(torch.tensor({data}, dtype={_real(dtype)}))"
        else:
            text = f"torch.tensor({literal(values.tolist())}, dtype={dtype})"
        if obj.requires_grad:
            text += ".requires_grad_(True)"
        return text
    if isinstance(obj, bool) or obj is None:
        return repr(obj)
    if isinstance(obj, float):
        return repr(obj) if math.isfinite(obj) else f"float({str(obj)!r})"
    if isinstance(obj, int | str):
        return repr(obj)
    if isinstance(obj, torch.dtype):
        return str(obj)
    if isinstance(obj, torch.device):
        return f"torch.device({str(obj)!r})"
    if isinstance(obj, torch.Size):
        return f"torch.Size({list(obj)!r})"
    if isinstance(obj, list):
        return "[" + ", ".join(literal(o) for o in obj) + "]"
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        inner = ", ".join(literal(o) for o in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in obj.items()) + "}"
    raise TypeError(f"no literal for {type(obj).__name__}")


def _real(dtype: str) -> str:
    return {"torch.complex64": "torch.float32", "torch.complex32": "torch.float16"}.get(
        dtype, "torch.float64"
    )
