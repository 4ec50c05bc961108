"""The standalone repro of a generated overload case: torch and the backend only.

The captured call is written as literals when it is small and dense; otherwise the
script replays the donor OpInfo sample under a small dispatch mode that keeps the
first call of the donor overload, as TorchCTS did. Then the variant's check runs on
CPU and on the device and `repro_check` judges them.
"""

from __future__ import annotations

from typing import Any, Protocol

from torchcts_cases.opinfo_source import generation_seed
from torchcts_cases.overload_capture import Donor
from torchcts_cases.overload_schema import out_arguments, schema
from torchcts_cases.overload_variants import RECIPE_DONOR
from torchcts_cases.repro import LITERAL_MAX_NUMEL, header, literal
from torchcts_cases.repro_check import RUNTIME, settings_block
from torchcts_cases.spec import CaseSpec
from torchcts_cases.transfer import tensors_in


class _OverloadLike(Protocol):
    spec: CaseSpec
    donor: Donor
    donor_overload: str
    functional: str
    plan: int | None

    def call(self) -> tuple[tuple[Any, ...], dict[str, Any]]: ...
    def tolerance(self, dtype: str) -> tuple[float, float]: ...


_CHECKS = {
    "call": "    return {'result': target(*a, **kw)}",
    "backward": "    return {'backward result': target(*a, **kw)}",
    "inplace": """    many = isinstance(a[0], list)  # a foreach op's self: a list, returns nothing
    selves = a[0] if many else [a[0]]
    views = [t.view(t.shape) for t in selves]
    storages = [t.untyped_storage()._cdata for t in selves]
    returned = target(*a, **kw)
    first = returned[0] if isinstance(returned, (list, tuple)) else returned
    return {'in-place returns self': returned is None if many else first is a[0],
            "in-place keeps self's storage":
                [t.untyped_storage()._cdata for t in selves] == storages,
            'in-place storage written': a[0],
            'in-place write seen by a view': views if many else views[0]}""",
    "writes": """    outs = {}
    if OUT_NAMES:
        template = functional(*fresh(a), **fresh(kw))
        if FUNCTIONAL_RETURNS > 1:  # its first results are the outs
            template = tuple(template)[:len(OUT_NAMES)]
            template = template[0] if len(OUT_NAMES) == 1 else template
        outs = outs_like(template, device)
    returned = target(*a, **kw, **outs)
    seen = {'writes: argument ' + n: a[i] if i < len(a) else kw.get(n)
            for i, n in WRITTEN}
    if not OUT_NAMES:
        return {'writes: result': returned, **seen}
    got = flat(returned)
    return {'writes: returns out':
                not got or all(x is y for x, y in zip(got, flat(outs))),
            'writes: out': [outs[n] for n in OUT_NAMES], **seen}""",
    "out": """    outs = outs_like(functional(*a, **kw), device)
    storages = [t.untyped_storage()._cdata for t in flat(outs)]
    returned = target(*a, **kw, **outs)
    return {'out= result': [outs[n] for n in OUT_NAMES],
            'out= returns out': all(x is y for x, y in zip(flat(returned), flat(outs))),
            "out= keeps the out's storage":
                [t.untyped_storage()._cdata for t in flat(outs)] == storages}""",
    "out_resize": """    template = functional(*a, **kw)
    numel = max(t.numel() for t in flat(template))
    return {'out= resizes an empty out': attempt(a, kw, template, device, (0,)),
            'out= resizes a wrong-shape out':
                attempt(a, kw, template, device, (numel + 1,))}""",
    "out_dtype": """    template = functional(*a, **kw)
    wrong = torch.int64 if flat(template)[0].is_floating_point() or \\
        flat(template)[0].is_complex() else torch.bool
    return {'out= of a wrong dtype': attempt(a, kw, template, device, None, wrong)}""",
}

_OUT_HELPERS = """

def flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat(v)]
    return [t for v in x for t in flat(v)] if isinstance(x, (list, tuple)) else []


def outs_like(template, device, shape=None, first_dtype=None):
    made = []
    def one(t):
        dtype = first_dtype if first_dtype is not None and not made else t.dtype
        made.append(1)
        where = 'cpu' if t.device.type == 'cpu' else device  # where its result is
        return torch.empty(t.shape if shape is None else shape, dtype=dtype,
                           device=where)
    if len(OUT_NAMES) == 1:
        if isinstance(template, (list, tuple)):
            return {OUT_NAMES[0]: [one(t) for t in template]}
        return {OUT_NAMES[0]: one(template)}
    return {n: one(t) for n, t in zip(OUT_NAMES, template)}


def fresh(x):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, dict):
        return {k: fresh(v) for k, v in x.items()}
    return type(x)(fresh(v) for v in x) if isinstance(x, (list, tuple)) else x


def attempt(a, kw, template, device, shape, first_dtype=None):
    outs = outs_like(template, device, shape, first_dtype)
    try:
        target(*a, **kw, **outs)
    except Exception as exc:
        return exc
    return [outs[n] for n in OUT_NAMES]
"""


def overload_repro(
    case: _OverloadLike,
    device: str,
    backend_import: str | None,
    options: dict[str, Any],
) -> str:
    """The repro script of one generated overload case."""
    spec = case.spec
    lines = [
        header(spec, backend_import, options),
        settings_block(device, case.tolerance, device == "meta"),
        f"target = torch.ops.aten.{_attribute(spec.op)}",
        f"functional = torch.ops.aten.{_attribute(case.functional)}",
        f"OUT_NAMES = {out_arguments(spec.op)!r}",
        f"WRITTEN = {_written(spec.op)!r}  # (position, name): arguments it writes",
        f"FUNCTIONAL_RETURNS = {len(schema(case.functional).returns)}",
    ]
    lines += _call_lines(case)
    lines += [
        RUNTIME,
        _OUT_HELPERS,
        "",
        "def run(device):",
        "    a, kw = to_dev((args, kwargs), device)",
        _CHECKS[spec.variant],
        "",
        "",
        "expected = outcome(run, 'cpu')",
        "judge(expected, outcome(run, DEVICE, expected))",
    ]
    return "\n".join(lines) + "\n"


def _written(name: str) -> list[tuple[int, str]]:
    """The arguments an overload writes, out= aside."""
    return [
        (i, a.name)
        for i, a in enumerate(schema(name).arguments)
        if a.alias_info and a.alias_info.is_write and not a.is_out
    ]


def _attribute(name: str) -> str:
    packet, _, overload = name.partition(".")
    return f"{packet}.{overload or 'default'}"


def _call_lines(case: _OverloadLike) -> list[str]:
    """``args, kwargs = ...``: literals, or the donor's replay."""
    args, kwargs = case.call()
    tensors = tensors_in([list(args), kwargs])
    small = sum(t.numel() for t in tensors) <= LITERAL_MAX_NUMEL
    if small and all(t.is_contiguous() for t in tensors):
        try:
            return [f"args, kwargs = {literal((tuple(args), kwargs))}"]
        except TypeError:
            pass
    if case.plan is not None:  # built from the schema, not captured from a sample
        return [
            "from torchcts_cases.overload_inputs import schema_call",
            f"args, kwargs = schema_call({case.functional!r}, {case.plan})",
        ]
    if case.donor.op == RECIPE_DONOR:  # a reviewed recipe's call
        return [
            "from torchcts_cases.overload_recipes import recipe_call",
            f"args, kwargs = recipe_call({case.functional!r})",
        ]
    donor = case.donor
    stream = f"{donor.dtype}:grad" if donor.grad else donor.dtype
    return [
        "import random",
        "import numpy",
        "from torch.testing._internal import common_methods_invocations as cmi",
        "from torch.utils._python_dispatch import TorchDispatchMode",
        "",
        "def seed_everything(seed):",
        "    torch.manual_seed(seed)",
        "    random.seed(seed)",
        "    numpy.random.seed(seed)",
        "",
        "class Keep(TorchDispatchMode):  # the donor's first call of the overload",
        "    found = None",
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):",
        f"        if func.name() == 'aten::{case.donor_overload}' and not self.found:",
        "            self.found = (tuple(a.detach().clone() if isinstance(a, torch.Tensor)"
        " else a for a in args), dict(kwargs or {}))",
        "        return func(*args, **(kwargs or {}))",
        "",
        "ops = [o for n in dir(cmi) if n == 'op_db' or (n.startswith('foreach_')"
        " and n.endswith('_op_db')) for o in getattr(cmi, n)]  # foreach lists too",
        f"op = next(o for o in ops if (o.name + '.' + o.variant_test_name"
        f" if o.variant_test_name else o.name) == {donor.op!r})",
        f"seed_everything({generation_seed(donor.op, stream)})",
        f"sample = next(iter(op.sample_inputs_func(op, 'cpu', torch.{donor.dtype}, "
        f"{donor.grad})))",
        f"seed_everything({donor.seed})",
        "keep = Keep()",
        "with keep:",
        "    result = op.op(sample.input, *sample.args, **sample.kwargs)",
        "    if " + repr(donor.grad) + ":",
        "        outs = [t for t in (result if isinstance(result, (list, tuple))"
        " else [result]) if isinstance(t, torch.Tensor) and t.requires_grad]",
        "        leaves = [t for t in [sample.input, *sample.args]"
        " if isinstance(t, torch.Tensor) and t.requires_grad]",
        "        torch.autograd.grad(sum(t.sum() for t in outs), leaves,"
        " allow_unused=True)",
        "args, kwargs = keep.found  # the donor overload's arguments; TorchCTS adapts",
        f"# them to aten::{case.functional}'s schema by argument name",
    ]
