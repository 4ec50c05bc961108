"""The overload shard of the case index: for every aten overload of the installed
torch, the generated cases it gets and the captured call they are built from, or why
none is generated.

Building it runs sample 0 of every OpInfo op on CPU in float32, int64 and bool,
forward and backward, under a `CallCapture` (the donors), then, per overload, adapts
a captured call of its functional sibling (`overload_schema.adapt_call`) and runs
each variant's check on CPU twice: a variant is generated only when both runs
complete, agree, and every property holds on CPU itself, so a CPU validation run of
these cases cannot fail for the harness's own choice of inputs. What is not
generated keeps its reason (``torchcts-cases overloads --not-generated``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from torchcts_cases import opinfo_source
from torchcts_cases.compare import compare
from torchcts_cases.overload_capture import Call, Donor, copy_call, donor_calls
from torchcts_cases.overload_checks import observe, wrong_dtype
from torchcts_cases.overload_schema import (
    Overload,
    adapt_call,
    all_overloads,
    functional_sibling,
    not_generated,
    op_overload,
)
from torchcts_cases.overload_variants import CALL, VARIANTS
from torchcts_cases.transfer import tensors_in

DONOR_DTYPES = ("float32", "int64", "bool")
MAX_DONORS = 3  # captured calls kept per overload (the first may not adapt)
Captures = dict[str, list[tuple[Donor, Call]]]


def build() -> dict[str, dict[str, Any]]:
    """The shard: overload name -> generated entry or {"kind", "reason"}."""
    captures = capture_all()
    by_base: dict[str, list[str]] = {}
    overloads = list(all_overloads())
    packets: dict[str, int] = {}
    for ovl in overloads:
        packets[ovl.packet] = packets.get(ovl.packet, 0) + 1
        if ovl.name in captures:
            by_base.setdefault(ovl.base, []).append(ovl.name)
    entries: dict[str, dict[str, Any]] = {}
    for ovl in overloads:
        reason = not_generated(ovl)
        if reason is None and ovl.kind == CALL and packets[ovl.packet] == 1:
            reason = "a functional op without siblings: OpInfo's own cases call it"
        if reason is not None:
            entries[ovl.name] = {"kind": ovl.kind or "none", "reason": reason}
            continue
        entries[ovl.name] = _entry(ovl, captures, by_base.get(ovl.base, []))
    return entries


def capture_all() -> Captures:
    """The first calls of every overload the donors dispatch, best donor first (an
    OpInfo op named after the overload's packet, then index order)."""
    captures: Captures = {}
    for dtype in DONOR_DTYPES:
        for segment, op in sorted(opinfo_source.op_table().items()):
            if getattr(torch, dtype) not in op.supported_dtypes("cpu"):
                continue
            for grad in _grad_passes(op, dtype):
                donor = Donor(segment, dtype, grad)
                try:
                    calls = donor_calls(donor)
                except Exception:  # a sample OpInfo cannot build: no donor
                    continue
                for name, call in calls.items():
                    kept = captures.setdefault(name, [])
                    named = op.name == name.partition(".")[0].rstrip("_")
                    if named and not any(d.op.startswith(op.name) for d, _ in kept):
                        kept.insert(0, (donor, call))
                    elif len(kept) < MAX_DONORS:
                        kept.append((donor, call))
                    del kept[MAX_DONORS:]
    return captures


def _grad_passes(op: Any, dtype: str) -> Iterator[bool]:
    yield False
    if op.supports_autograd and getattr(torch, dtype) in op.supported_backward_dtypes(
        "cpu"
    ):
        yield True


def _entry(ovl: Overload, captures: Captures, siblings: list[str]) -> dict[str, Any]:
    functional = functional_sibling(ovl)
    if functional is None:
        return {
            "kind": ovl.kind,
            "reason": f"no functional overload of {ovl.base} takes its arguments",
        }
    donors = sorted(siblings, key=lambda n: n != functional)
    last = f"no OpInfo sample calls {ovl.base} or a sibling of it"
    for donor_overload in donors:
        for donor, (args, kwargs) in captures[donor_overload]:
            if any(t.layout != torch.strided for t in tensors_in([list(args), kwargs])):
                last = "its captured call takes a sparse tensor (outside the dense contract)"
                continue
            adapted = adapt_call(donor_overload, args, kwargs, functional)
            if isinstance(adapted, str):
                last = adapted
                continue
            variants, skipped = _cpu_variants(ovl, functional, adapted)
            if not variants:
                last = "; ".join(f"{v}: {r}" for v, r in skipped.items())
                continue
            entry: dict[str, Any] = {
                "kind": ovl.kind,
                "functional": functional,
                "donor": {**donor.to_dict(), "overload": donor_overload},
                "variants": variants,
            }
            if skipped:
                entry["skipped"] = skipped
            return entry
    return {"kind": ovl.kind, "reason": last}


def _cpu_variants(
    ovl: Overload, functional: str, call: Call
) -> tuple[list[str], dict[str, str]]:
    """The variants whose check completes, repeats and holds on CPU; why not the
    others."""
    assert ovl.kind is not None
    variants: list[str] = []
    skipped: dict[str, str] = {}
    for variant in VARIANTS[ovl.kind]:
        problem = _cpu_problem(variant, ovl.name, functional, call)
        if problem is None:
            variants.append(variant)
        else:
            skipped[variant] = problem
    return variants, skipped


def _cpu_problem(variant: str, target: str, functional: str, call: Call) -> str | None:
    try:
        if variant == "out_dtype":
            template = tensors_in(_functional_result(functional, call))
            if not template or wrong_dtype(template[0].dtype) is None:
                return "a bool result casts into every dtype: no out dtype is refused"
        first = observe(variant, target, functional, call, "cpu")
        second = observe(variant, target, functional, call, "cpu")
    except Exception as exc:
        text = str(exc).strip().splitlines()
        return f"CPU raises {type(exc).__name__}: {text[0][:160] if text else ''}"
    for key, value in first.items():
        if isinstance(value, str):
            return f"on CPU itself, {key}: {value}"
        if variant in ("out", "out_resize") and isinstance(value, list):
            # the out= values must be the functional result: where CPU's own out=
            # differs (binary_cross_entropy.out reads its out as scratch), its
            # values are no expectation for a backend
            expected = tensors_in(_functional_result(functional, call))
            differs = compare(expected, tensors_in(value), path=f"{target}: {key}")
            if differs is not None:
                return (
                    f"CPU's out= disagrees with its functional result: {differs[:200]}"
                )
    mismatch = compare(first, second, path=target)
    if mismatch is not None:
        return f"two CPU runs disagree (nondeterministic): {mismatch[:200]}"
    return None


def _functional_result(functional: str, call: Call) -> Any:
    args, kwargs = copy_call(call)
    return op_overload(functional)(*args, **kwargs)
