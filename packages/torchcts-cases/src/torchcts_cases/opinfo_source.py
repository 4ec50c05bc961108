"""The one module that touches ``torch.testing._internal``: PyTorch's own OpInfo database.

It enumerates the ops of the installed torch with their per-variant sample counts (for
the case index) and rebuilds one sample on CPU when a case executes. Importing the
database costs seconds, so everything else reaches it only through these functions and
only when the case index is cold or a case actually runs.
"""

from __future__ import annotations

import functools
import hashlib
import random
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import torch

from torchcts_cases.edge_samples import EdgeFinder
from torchcts_cases.inductor_stand_in import without_inductor
from torchcts_cases.levels import FOREACH_PREFIX, op_family
from torchcts_cases.nonfinite import has_targets, nonfinite_not_valid
from torchcts_cases.opinfo_marks import compare_cpu_skip
from torchcts_cases.sample_stream import (
    PassExhausted,
    SampleStreams,
    rng_state,
    set_rng_state,
)
from torchcts_cases.spec import OracleUnavailable

FORWARD_LIKE = (
    "forward",
    "method",
    "inplace",
    "out",
    "noncontiguous",
    "nonfinite",
    "backward",
)

# OpInfo's compare-to-CPU skips whose reason means "any valid output differs": these get a
# legal-output (metadata) check instead of a value comparison.
_NONDETERMINISTIC_REASONS = ("non-deterministic", "nondeterministic")
# Ops with more than one valid answer when values tie; indices are checked by gathering.
TIE_OPS = frozenset(
    [
        "sort",
        "argsort",
        "topk",
        "kthvalue",
        "mode",
        "median",
        "nanmedian",
        "msort",
        "max",
        "min",
    ]
)
_UNORDERED_OPS = frozenset({"unique"})
_ELEMENTWISE_CLASSES = ("UnaryUfuncInfo", "BinaryUfuncInfo", "ReductionOpInfo")


@functools.cache
def op_table() -> dict[str, Any]:
    """OpInfo by case-id op segment: name, plus ``.variant_test_name`` when present.

    ``op_db`` and every foreach list the installed torch has (``foreach_*_op_db``:
    unary, binary, pointwise, reduce, other on 2.13), whose names all start with
    ``_foreach_``; a segment two lists share would make two cases one id, so it
    is an error, not a silent overwrite.
    """
    cmi = _import_database()
    table: dict[str, Any] = {}
    for name in ("op_db", *foreach_db_names(cmi)):
        for op in getattr(cmi, name):
            segment = op_segment(op)
            if segment in table:
                raise RuntimeError(f"OpInfo {segment!r} is in two lists ({name})")
            table[segment] = op
    return table


def _import_database() -> Any:
    """``common_methods_invocations``, imported without the compiler stack when the
    installed torch allows it (`inductor_stand_in`), else as it is."""
    try:
        with without_inductor():
            from torch.testing._internal import common_methods_invocations as cmi
    except ImportError:
        from torch.testing._internal import common_methods_invocations as cmi
    return cmi


def foreach_db_names(module: Any) -> list[str]:
    """The foreach OpInfo lists a ``common_methods_invocations`` module defines."""
    return sorted(
        n for n in vars(module) if n.startswith("foreach_") and n.endswith("_op_db")
    )


def list_name(op: Any) -> str:
    """The ``common_methods_invocations`` list that holds `op` (what a repro imports),
    found by its segment, so a replayed case's stand-in finds it too."""
    if not op.name.startswith(FOREACH_PREFIX):
        return "op_db"
    from torch.testing._internal import common_methods_invocations as cmi

    segment = op_segment(op)
    for name in foreach_db_names(cmi):
        if any(op_segment(entry) == segment for entry in getattr(cmi, name)):
            return name
    raise KeyError(f"OpInfo {segment!r} is in no foreach list")


def is_foreach(op: Any) -> bool:
    """A ``ForeachFuncInfo``: its samples are lists of tensors, and its method
    "variant" is the function itself (no ``Tensor`` method, no ``out=``)."""
    return type(op).__name__ == "ForeachFuncInfo"


def inplace_only(op: Any) -> bool:
    """A foreach op with no out-of-place function (``_foreach_zero_``,
    ``_foreach_copy_``): OpInfo makes its ``op`` the in-place one, whose forward call
    would return None and repeat the in-place case under another name."""
    return is_foreach(op) and op.op is op.inplace_variant


def op_segment(op: Any) -> str:
    """The op segment of a case id for one OpInfo entry."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def find_op(segment: str) -> Any:
    """The OpInfo of a case-id op segment; KeyError names it."""
    try:
        return op_table()[segment]
    except KeyError:
        raise KeyError(
            f"no OpInfo named {segment!r} in torch {torch.__version__}"
        ) from None


def comparison_policy(op: Any) -> tuple[str, str | None, str | None]:
    """(expected source, legal-output mode, not-valid reason) from OpInfo metadata.

    OpInfo marks ops whose CPU and device results may legally differ by skipping its
    ``test_compare_cpu``; we honour that instead of comparing values that cannot agree.
    """
    reason = compare_cpu_skip(op)
    if op.name in _UNORDERED_OPS:
        return "legal_output", "unordered", None
    if op.has_nondeterministic_output or (
        reason and any(r in reason for r in _NONDETERMINISTIC_REASONS)
    ):
        return "legal_output", "metadata", None
    if reason is not None:
        return "cpu_reference", None, f"OpInfo skips test_compare_cpu: {reason}"
    if op.name in TIE_OPS:
        return "legal_output", "ties", None
    return "cpu_reference", None, None


def surfaces(op: Any) -> tuple[str, ...]:
    """The aten overload packet an OpInfo is named after, when it is one."""
    name = getattr(op, "aten_name", None) or op.name
    return (f"aten::{name}",) if hasattr(torch.ops.aten, name) else ()


def inplace_surfaces(op: Any) -> tuple[str, ...]:
    """The in-place packet (``aten::abs_``, ``aten::_foreach_add_``) the in-place
    variant means to reach, when the op has that variant and aten that packet."""
    if op.inplace_variant is None:
        return ()
    name = (getattr(op, "aten_name", None) or op.name) + "_"
    return (f"aten::{name}",) if hasattr(torch.ops.aten, name) else ()


def describe(op: Any) -> dict[str, Any]:
    """Per-op facts the case index keeps so listing never imports OpInfo again."""
    source, mode, not_valid = comparison_policy(op)
    elementwise = type(op).__name__ in _ELEMENTWISE_CLASSES
    return {
        "name": op.name,
        "family": op_family(op.name, elementwise_or_reduction=elementwise),
        "source": source,
        "mode": mode,
        "not_valid": not_valid,
        "surfaces": list(surfaces(op)),
        "inplace_surfaces": list(inplace_surfaces(op)),
    }


class Counted(NamedTuple):
    """What one pass over an op's samples in one dtype tells the case index."""

    counts: dict[str, int]  # variant -> number of cases
    problem: str | None  # a generation error, reported, never hidden
    # the forward samples the nonfinite variant's cases are built from, in order
    nonfinite_samples: list[int]
    # why CPU cannot judge the nonfinite cases in this dtype (`nonfinite_not_valid`)
    nonfinite_not_valid: str | None = None
    # the edge samples of the forward and the backward pass (`edge_samples`)
    edges: dict[str, list[int]] | None = None


def variant_counts(op: Any, dtype: torch.dtype) -> Counted:
    """How many samples each variant has for `dtype` on CPU, and any generation error.

    The nonfinite variant numbers only the forward samples it can place a value in
    (`torchcts_cases.nonfinite`): a sample whose floating tensors are all empty, or
    that has none, would repeat its forward case under another name.
    """
    if dtype not in op.supported_dtypes("cpu"):
        return Counted({}, None, [])
    nonfinite: list[int] = []
    forward_edges, backward_edges = EdgeFinder(), EdgeFinder()
    count = 0
    try:
        for sample in _samples(op, dtype, requires_grad=False):
            if has_targets(sample):
                nonfinite.append(count)
            forward_edges.see(count, sample)
            count += 1
    except Exception as exc:  # an OpInfo bug on this torch: report, never hide
        return Counted({}, f"{type(exc).__name__}: {exc}"[:300], [])
    if inplace_only(op):
        return Counted(_nonzero({"inplace": count}), None, [])
    counts = {"forward": count, "noncontiguous": count, "nonfinite": len(nonfinite)}
    not_valid = nonfinite_not_valid(op, dtype) if nonfinite else None
    foreach = is_foreach(op)
    if op.method_variant is not None and not foreach:
        counts["method"] = count
    if op.inplace_variant is not None:
        counts["inplace"] = count
    # a foreach OpInfo's supports_out means "has an out-of-place form": no out=
    if op.supports_out and not foreach and count and _returns_tensors(op, dtype):
        counts["out"] = count
    edges = {"forward": forward_edges.samples()}
    if op.supports_autograd and dtype in op.supported_backward_dtypes("cpu"):
        # requires_grad samples can differ in number from the plain ones
        try:
            backward = 0
            for sample in _samples(op, dtype, requires_grad=True):
                backward_edges.see(backward, sample)
                backward += 1
            counts["backward"] = backward
            edges["backward"] = backward_edges.samples()
        except Exception as exc:
            problem = f"backward samples: {type(exc).__name__}: {exc}"[:300]
            return Counted(_nonzero(counts), problem, nonfinite, not_valid, edges)
    edges = {k: v for k, v in edges.items() if v}
    return Counted(_nonzero(counts), None, nonfinite, not_valid, edges)


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def _returns_tensors(op: Any, dtype: torch.dtype) -> bool:
    """Whether the functional op returns tensors (out= needs them; ``equal`` does not).

    Decided on the first sample; an op that raises there keeps its out= cases, whose
    reference then reports the problem.
    """
    try:
        sample = next(iter(_samples(op, dtype, requires_grad=False)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:
        return True
    items = result if isinstance(result, list | tuple) else [result]
    return all(isinstance(r, torch.Tensor) for r in items)


def error_count(op: Any) -> tuple[int, str | None]:
    """How many error inputs OpInfo declares for `op` on CPU."""
    if op.error_inputs_func is None:
        return 0, None
    try:
        return sum(1 for _ in _errors(op)), None
    except Exception as exc:
        return 0, f"{type(exc).__name__}: {exc}"[:300]


def generation_seed(segment: str, stream: str) -> int:
    """The seed one pass of an OpInfo generator starts from: (op, dtype, grad) only.

    Some generators draw sizes, masks or the number of samples at random
    (``masked.var``, ``max_unpool``), so counting them for the index and rebuilding
    sample *i* for a case must replay the same draws. Both start every pass from this
    seed, so the count, the case ids and each sample are the same on every machine and
    in every process. `stream` names the pass (``float16``, ``float16:grad``,
    ``errors``); the case id holds all of it.
    """
    digest = hashlib.sha256(f"opinfo-generator|{segment}|{stream}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def seed_everything(seed: int) -> None:
    """Seed every RNG an OpInfo generator or a case may draw from: torch on CPU and on
    every device that can run here, random, numpy.

    The effect of ``torch.manual_seed`` without its lazy seeds for device modules that
    are compiled in but cannot run here (CUDA, XPU, MTIA on a machine without them):
    queuing one formats a stack trace, about 0.5 ms on every case.
    """
    _seed_generation(seed)
    for module in _runnable_device_modules():
        if not module._is_in_bad_fork():
            module.manual_seed_all(seed)
    if torch.backends.mps.is_available() and not torch.mps._is_in_bad_fork():
        torch.mps.manual_seed(seed)
    custom = getattr(torch, torch._C._get_privateuse1_backend_name(), None)
    seed_all = getattr(custom, "manual_seed_all", None)
    in_bad_fork = getattr(custom, "_is_in_bad_fork", None)
    if callable(seed_all) and callable(in_bad_fork) and not in_bad_fork():
        seed_all(seed)


def _runnable_device_modules() -> list[Any]:
    modules = []
    for name in ("cuda", "xpu", "mtia"):
        module = getattr(torch, name, None)
        available = getattr(module, "is_available", None)
        if callable(available) and available():
            modules.append(module)
    return modules


def _seed_generation(seed: int) -> None:
    """Seed what a generator pass draws from: torch's CPU generator, random, numpy.

    Passes build their samples on CPU, so no device generator is involved.
    """
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


def _stream(dtype: torch.dtype | None, requires_grad: bool) -> str:
    if dtype is None:
        return "errors"
    name = str(dtype).removeprefix("torch.")
    return f"{name}:grad" if requires_grad else name


def _start(
    op: Any, dtype: torch.dtype | None, requires_grad: bool, device: str = "cpu"
) -> Iterable[Any]:
    """Seed for the pass, then make OpInfo's samples (error inputs when no dtype) for
    `device` (the CPU, except for `cpu_pinned`'s meta passes).

    Calls the generator function itself: ``op.sample_inputs`` wraps it in a tracker
    that walks the Python stack (``inspect.stack``) on every call, which costs more
    than generating the samples.
    """
    _seed_generation(generation_seed(op_segment(op), _stream(dtype, requires_grad)))
    if dtype is None:
        return op.error_inputs_func(op, device)  # type: ignore[no-any-return]
    return op.sample_inputs_func(op, device, dtype, requires_grad)  # type: ignore[no-any-return]


def _samples(op: Any, dtype: torch.dtype, *, requires_grad: bool) -> Iterator[Any]:
    """One fresh pass of OpInfo's sample generator, seeded as every pass is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield from _start(op, dtype, requires_grad)


def _errors(op: Any) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield from _start(op, None, False)


# Live passes of this process: consecutive samples of one pass cost one step each.
SAMPLE_STREAMS = SampleStreams(capacity=4)
# The same for passes built for another device (`nth_item_on`), kept apart so that
# they never evict the CPU passes the cases are built from.
DEVICE_STREAMS = SampleStreams(capacity=4)


def build_sample(
    op: Any, variant: str, dtype: torch.dtype | None, index: int, seed: int
) -> Any:
    """The `index`-th sample (or error input) of `op`, built on CPU.

    The generator replays the draws the index counted (`generation_seed`), continuing
    a live pass of this process when it can (`SAMPLE_STREAMS`); then every RNG is
    seeded with the case's own `seed`, so whatever the op itself draws when the case
    runs depends on the case id alone.
    """
    item = _nth_item(op, variant, dtype, index)
    seed_everything(seed)
    return item


def _nth_item(
    op: Any, variant: str, dtype: torch.dtype | None, index: int, device: str = "cpu"
) -> Any:
    grad = variant == "backward"
    if variant == "error_inputs":
        dtype = None
    else:
        assert dtype is not None
    key = (id(op), op_segment(op), _stream(dtype, grad), device)
    streams = SAMPLE_STREAMS if device == "cpu" else DEVICE_STREAMS
    try:
        return streams.item(
            key, functools.partial(_start, op, dtype, grad, device), index
        )
    except PassExhausted:
        raise OracleUnavailable(
            f"OpInfo {op_segment(op)} has no sample {index} for {variant} on this torch"
        ) from None
    except Exception as exc:
        raise OracleUnavailable(
            f"OpInfo could not build sample {index} of {op_segment(op)}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def nth_item_on(
    op: Any, variant: str, dtype: torch.dtype | None, index: int, device: str
) -> Any:
    """Sample `index` as OpInfo's generator builds it for `device` (same generation
    seed as the CPU pass), leaving the global RNGs as it found them.

    OracleUnavailable when the generator cannot build it there (a generator that reads
    values, ``.item()``, fails on meta)."""
    state = rng_state()
    try:
        return _nth_item(op, variant, dtype, index, device)
    finally:
        set_rng_state(state)


def variant_callable(op: Any, variant: str) -> Any:
    """The Python callable a variant invokes (function, method or in-place)."""
    if variant == "method":
        return op.method_variant
    if variant == "inplace":
        return op.inplace_variant
    return op.op


def make_noncontiguous(obj: Any) -> Any:
    """OpInfo's noncontiguous transformation of every tensor in `obj`, on its device."""
    from torch.testing._internal.common_utils import noncontiguous_like

    if isinstance(obj, torch.Tensor):
        with torch.no_grad():
            result = noncontiguous_like(obj)  # type: ignore[no-untyped-call]
        return result.requires_grad_(obj.requires_grad) if obj.is_leaf else result
    if isinstance(obj, list):
        return [make_noncontiguous(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(make_noncontiguous(o) for o in obj)
    if isinstance(obj, dict):
        return {k: make_noncontiguous(v) for k, v in obj.items()}
    return obj
