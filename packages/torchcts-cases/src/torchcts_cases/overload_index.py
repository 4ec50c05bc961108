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

An overload no captured call serves (no OpInfo sample reaches it or a sibling, or the
captured sibling call does not adapt) gets the reviewed call of its functional
sibling's recipe where one exists (`overload_recipes`: arguments that must agree with
each other, such as a convolution's weight and input), else a call built from its
schema (`overload_inputs`), tried plan by plan on CPU; the first call whose variants
hold on CPU in two passes (four runs) is kept. Each overload is tried in a forked
child (`forked`): a private kernel that crashes on synthetic inputs costs its
overload, not the build. When every call fails, the reason says so and keeps the
first CPU error.

Rebuilding gives the same shard: a kernel that reads memory it never wrote could
agree with itself by chance, so the two runs of each check differ in what such
memory holds: the outs are filled with 0 in one and 1 in the other, and glibc's
allocator fills every block it hands out with 0xaa in one and 0x55 in the other
(``mallopt(M_PERTURB)``, what ``MALLOC_PERTURB_`` sets); a variant whose result
follows the garbage (``_weight_norm_interface`` on a weight its norms do not fit)
is not generated.

Foreach ops: OpInfo's foreach family calls their functional and in-place overloads;
the generated cases add what it cannot reach (every ``.out`` overload, which writes a
list of outs, and the overloads no foreach sample calls, such as
``_foreach_addcdiv.Tensor``).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

import torch

from torchcts_cases import opinfo_source
from torchcts_cases.compare import compare
from torchcts_cases.forked import run_forked
from torchcts_cases.overload_capture import Call, Donor, copy_call, donor_calls
from torchcts_cases.overload_checks import observe, wrong_dtype
from torchcts_cases.overload_inputs import PLANS, NoValue, plan, schema_call
from torchcts_cases.overload_recipes import RECIPES, recipe_call, recipe_dtype
from torchcts_cases.overload_schema import (
    RECIPE_LIFTS,
    Overload,
    adapt_call,
    all_overloads,
    functional_sibling,
    not_generated,
    op_overload,
)
from torchcts_cases.overload_variants import (
    CALL,
    INPLACE,
    RECIPE_DONOR,
    SCHEMA_DONOR,
    VARIANTS,
)
from torchcts_cases.transfer import tensors_in

DONOR_DTYPES = ("float32", "int64", "bool")
# why a captured call serves no generated case; the schema cannot build a sparse one
SPARSE_CALL = "its captured call takes a sparse tensor (outside the dense contract)"
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
        alone = ovl.kind == CALL and packets[ovl.packet] == 1
        if reason is None and alone and ovl.name in captures:
            reason = "a functional op without siblings: OpInfo's own cases call it"
        foreach = ovl.packet.startswith("_foreach_") and ovl.kind in (CALL, INPLACE)
        if reason is None and foreach and ovl.name in captures:
            reason = "a foreach op OpInfo's foreach cases call: they judge it"
        if reason in RECIPE_LIFTS and functional_sibling(ovl) in RECIPES:
            # only the recipe's call: a captured one may have ties, short targets
            entries[ovl.name] = _entry(ovl, {}, [])
            continue
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
    # the functional itself first (in another packet for FUNCTIONAL_ELSEWHERE)
    donors = [functional] if functional in captures else []
    donors += [n for n in siblings if n != functional]
    last = f"no OpInfo sample calls {ovl.base} or a sibling of it"
    for donor_overload in donors:
        for donor, (args, kwargs) in captures[donor_overload]:
            if any(t.layout != torch.strided for t in tensors_in([list(args), kwargs])):
                last = SPARSE_CALL
                continue
            adapted = adapt_call(donor_overload, args, kwargs, functional)
            if isinstance(adapted, str):
                last = adapted
                continue
            variants, skipped = _cpu_variants(ovl, functional, adapted)
            if not variants:
                last = _skipped_text(skipped)
                continue
            donor_fields = {**donor.to_dict(), "overload": donor_overload}
            return _generated(ovl, functional, donor_fields, variants, skipped)
    if last == SPARSE_CALL:
        return {"kind": ovl.kind, "reason": last}
    if functional in RECIPES:
        try:
            made: dict[str, Any] = run_forked(
                lambda: _recipe_entry(ovl, functional, last)
            )
        except RuntimeError as exc:  # CPU's own kernel crashed on the recipe
            return {
                "kind": ovl.kind,
                "reason": f"{last}; CPU crashes on the reviewed recipe's call ({exc})",
            }
        if "reason" not in made:
            return made
        last = made["reason"]
    try:
        built: dict[str, Any] = run_forked(lambda: _schema_entry(ovl, functional, last))
    except RuntimeError as exc:  # CPU's own kernel crashed on a schema-built call
        return {
            "kind": ovl.kind,
            "reason": f"{last}; CPU crashes on a schema-built input ({exc})",
        }
    return built


def _generated(
    ovl: Overload,
    functional: str,
    donor: dict[str, Any],
    variants: list[str],
    skipped: dict[str, str],
) -> dict[str, Any]:
    """The shard entry of a generated overload: its call's donor and the variants
    that hold on CPU (with the ones that do not, and why)."""
    entry: dict[str, Any] = {
        "kind": ovl.kind,
        "functional": functional,
        "donor": donor,
        "variants": variants,
    }
    if skipped:
        entry["skipped"] = skipped
    return entry


def _skipped_text(skipped: dict[str, str]) -> str:
    """Why no variant of a call holds on CPU, variant by variant."""
    return "; ".join(f"{v}: {r}" for v, r in skipped.items())


def _schema_entry(ovl: Overload, functional: str, last: str) -> dict[str, Any]:
    """The entry of the first plan whose call of `functional` holds on CPU, or the
    reason no plan does (`last`: why no captured call served)."""
    first_error = ""
    for number in range(len(PLANS)):
        try:
            call = schema_call(functional, number)
        except NoValue as exc:
            return {"kind": ovl.kind, "reason": f"{last}; {exc}"}
        variants, skipped = _stable_variants(ovl, functional, call)
        if not variants:
            first_error = first_error or _skipped_text(skipped)
            continue
        donor = {"op": SCHEMA_DONOR, "dtype": plan(number)[1], "grad": False}
        donor_fields = {**donor, "overload": functional, "plan": number}
        return _generated(ovl, functional, donor_fields, variants, skipped)
    return {
        "kind": ovl.kind,
        "reason": f"{last}; CPU raises on every schema-built input ({first_error})",
    }


def _recipe_entry(ovl: Overload, functional: str, last: str) -> dict[str, Any]:
    """The entry of a call from `functional`'s reviewed recipe, or why it fails."""
    variants, skipped = _stable_variants(ovl, functional, recipe_call(functional))
    if not variants:
        return {
            "kind": ovl.kind,
            "reason": f"{last}; CPU raises on the reviewed recipe's call "
            f"({_skipped_text(skipped)})",
        }
    donor = {"op": RECIPE_DONOR, "dtype": recipe_dtype(functional), "grad": False}
    donor_fields = {**donor, "overload": functional}
    return _generated(ovl, functional, donor_fields, variants, skipped)


def _stable_variants(
    ovl: Overload, functional: str, call: Call
) -> tuple[list[str], dict[str, str]]:
    """`_cpu_variants` of a synthetic call, kept only when a second pass keeps the
    same variants (a kernel with a race would not)."""
    variants, skipped = _cpu_variants(ovl, functional, call)
    if variants and _cpu_variants(ovl, functional, call)[0] != variants:
        return [], {"all": "two passes of the CPU checks disagree"}
    return variants, skipped


_M_PERTURB = -6  # glibc's mallopt parameter behind MALLOC_PERTURB_


@contextlib.contextmanager
def _malloc_perturbed(byte: int) -> Iterator[None]:
    """Within: every block glibc's malloc hands out is filled with ``~byte`` (a
    no-op where the C library has no mallopt)."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_PERTURB, byte)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(_M_PERTURB, 0)


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
        # other bytes in the outs and in fresh memory: a kernel reading either
        # unwritten gives two results
        with _malloc_perturbed(0x55):
            first = observe(variant, target, functional, call, "cpu", fill=0)
        with _malloc_perturbed(0xAA):
            second = observe(variant, target, functional, call, "cpu", fill=1)
    except Exception as exc:
        text = str(exc).strip().splitlines()
        return f"CPU raises {type(exc).__name__}: {text[0][:160] if text else ''}"
    # first: a result that follows unwritten memory says nothing else reliably
    mismatch = compare(first, second, path=target)
    if mismatch is not None:
        return (
            "two CPU runs disagree (nondeterministic, or it reads memory it never "
            f"wrote): {_headline(mismatch)}"
        )
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
                    "CPU's out= disagrees with its functional result: "
                    f"{_headline(differs)}"
                )
    return None


def _headline(mismatch: str) -> str:
    """A mismatch's path and verdict without its numbers (which, for a kernel
    reading unwritten memory, differ from build to build)."""
    return mismatch.split(";")[0][:200]


def _functional_result(functional: str, call: Call) -> Any:
    args, kwargs = copy_call(call)
    return op_overload(functional)(*args, **kwargs)
