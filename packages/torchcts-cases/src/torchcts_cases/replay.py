"""Saved inputs of OpInfo cases, so rerunning one does not import PyTorch's OpInfo.

Importing the OpInfo database costs about 3 CPU-seconds (half of it torch._dynamo,
which the database's imports pull in), more than the rest of a one-case rerun
together. The engineer's fix loop reruns cases that did not pass, and for those the
run that judged them already held the sample. So when a non-passed OpInfo case gets
its repro script, it also gets a *capsule* beside it (``<key>_repros/<case>.pt``):
the CPU sample exactly as OpInfo built it, the names of the callables the variant
calls, and the error OpInfo expects for an error input. Transformations of a variant
stay out of the capsule and run again on the sample read back, as they do on a built
one: noncontiguous on the device, and nonfinite's NaN and Inf, whose placement depends
on the case id and the sample alone (`torchcts_cases.nonfinite`).

A capsule is written only when it is exact: every callable is found again by name
in one of a few torch namespaces and is the very same object, the backward sample
keeps OpInfo's identity gradient post-processing, and the sample read back equals the
one built (dtype, shape, strides, offset, conj/neg bits, grad flags, identity between
tensors, the storage bytes, every plain value). Otherwise there is no capsule and a
rerun builds the sample from OpInfo as always. A rerun in which every OpInfo case has
a capsule skips the import (`torchcts_cases.warm_up`); the case executes and is judged
by the same code either way, after the same seeding.

Capsules are a local cache of this machine's own runs, like the probe table: they are
read with ``torch.load(weights_only=True)`` (data only, never code), checked against
the case id, torch and package versions, and anything that does not read back as a
capsule of this case is ignored (the case falls back to OpInfo). Submission archives
never carry them.
"""

from __future__ import annotations

import builtins
import importlib.metadata
import io
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch

from torchcts_cases.spec import CaseSpec
from torchcts_cases.transfer import tensors_in

CAPSULE_FORMAT = 2  # 2: with the positions of the tensors that stay on the CPU
# where a variant's callable may be found again by name; nothing else is resolved
_NAMESPACES: dict[str, Any] = {
    "torch": torch,
    "torch.Tensor": torch.Tensor,
    "torch.nn.functional": torch.nn.functional,
    "torch.special": torch.special,
    "torch.linalg": torch.linalg,
    "torch.fft": torch.fft,
}
_DEFAULT_GRAD_FN = "SampleInput.__init__.<locals>.<lambda>"

# case id -> capsule path, or None: set by the runner (`use_inputs_from`)
_finder: Callable[[str], Path | None] | None = None


@cache
def package_version() -> str:
    """This package's version (a capsule of another version is not trusted)."""
    return importlib.metadata.version("torchcts-cases")


@dataclass(frozen=True)
class ReplayedOp:
    """The parts of an OpInfo entry a case calls, found again by name."""

    name: str
    variant_test_name: str
    op: Any
    method_variant: Any
    inplace_variant: Any


@dataclass(frozen=True)
class ReplayedSample:
    """A SampleInput read back: OpInfo's identity gradient post-processing."""

    input: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @staticmethod
    def output_process_fn_grad(result: Any) -> Any:
        """OpInfo's default: the result itself."""
        return result


@dataclass(frozen=True)
class ReplayedError:
    """An ErrorInput read back: its sample, the exception type and message pattern."""

    sample_input: ReplayedSample
    error_type: type[BaseException]
    error_regex: str


@dataclass(frozen=True)
class Replay:
    """A capsule read back for one case; `pinned` as `torchcts_cases.cpu_pinned`."""

    op: ReplayedOp
    item: ReplayedSample | ReplayedError
    pinned: frozenset[int] = frozenset()


def use_inputs_from(find: Callable[[str], Path | None] | None) -> None:
    """Where this process finds capsules: `find(case_id)` names the file, or None.

    The runner knows the results layout; this package only reads what it is given.
    """
    global _finder
    _finder = find
    replay_for.cache_clear()


@cache
def replay_for(case_id: str) -> Replay | None:
    """The capsule of `case_id` when one exists and reads back as this case's."""
    if _finder is None:
        return None
    try:
        path = _finder(case_id)
    except OSError:
        return None
    return None if path is None else load(path, case_id)


def all_replayed(specs: list[CaseSpec]) -> bool:
    """Whether every spec in `specs` has a capsule (then OpInfo need not load)."""
    return all(replay_for(spec.case_id) is not None for spec in specs)


# -- writing ---------------------------------------------------------------------


def capture(
    spec: CaseSpec, op: Any, item: Any, pinned: frozenset[int] = frozenset()
) -> bytes | None:
    """The capsule of one OpInfo case, or None when it would not be exact; `pinned`
    are the positions of the sample's tensors that stay on the CPU."""
    if spec.variant == "out" and op.op is None:
        return None
    names: dict[str, str | None] = {}
    for field in ("op", "method_variant", "inplace_variant"):
        target = getattr(op, field, None)
        name = None if target is None else _exact_name(target)
        if target is not None and name is None:
            if _needed(spec.variant, field):
                return None
            continue  # a variant this case never calls
        names[field] = name
    error: dict[str, str] | None = None
    if spec.variant == "error_inputs":
        type_name = str(item.error_type.__name__)
        if getattr(builtins, type_name, None) is not item.error_type:
            return None  # only builtin exception types are named again
        error = {"type": type_name, "regex": str(item.error_regex)}
        sample = item.sample_input
    else:
        sample = item
        grad_fn = getattr(sample.output_process_fn_grad, "__qualname__", "")
        if spec.variant == "backward" and grad_fn != _DEFAULT_GRAD_FN:
            return None
    parts = (sample.input, tuple(sample.args), dict(sample.kwargs))
    if not _plain_tensors(parts):
        return None
    capsule = {
        "format": CAPSULE_FORMAT,
        "case_id": spec.case_id,
        "torch": str(torch.__version__),
        "cases": package_version(),
        "op": {"name": op.name, "variant_test_name": op.variant_test_name or ""},
        "callables": names,
        "error": error,
        "sample": parts,
        "cpu_pinned": sorted(pinned),
    }
    buffer = io.BytesIO()
    try:
        torch.save(capsule, buffer)
        back = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    except Exception:  # a value torch.save or the data-only loader cannot carry
        return None
    if not _same(parts, back["sample"], {}):
        return None
    return buffer.getvalue()


def _needed(variant: str, field: str) -> bool:
    if field == "method_variant":
        return variant == "method"
    if field == "inplace_variant":
        return variant == "inplace"
    return variant not in ("method", "inplace")


def _exact_name(target: Any) -> str | None:
    name = name_of(target)
    try:
        return name if name is not None and resolve(name) is target else None
    except LookupError:
        return None


def name_of(target: Any) -> str | None:
    """``namespace:attribute`` naming `target` exactly, or None."""
    attr = getattr(target, "__name__", None)
    for label, namespace in _NAMESPACES.items():
        if isinstance(attr, str) and getattr(namespace, attr, None) is target:
            return f"{label}:{attr}"
    # bound under another name than its own (torch.fft.fft is ``fft_fft``)
    return _names().get(id(target))


@cache
def _names() -> dict[int, str]:
    """id -> ``namespace:attribute`` for every callable in the namespaces."""
    found: dict[int, str] = {}
    for label, namespace in reversed(_NAMESPACES.items()):
        for attr, value in vars(namespace).items():
            if attr.isidentifier() and callable(value):
                found[id(value)] = f"{label}:{attr}"
    return found


def resolve(name: object) -> Any:
    """The object `name_of` named; LookupError when it names nothing here."""
    if not isinstance(name, str):
        raise LookupError("not a name")
    label, _, attr = name.partition(":")
    namespace = _NAMESPACES.get(label)
    if namespace is None or not attr.isidentifier():
        raise LookupError(f"{name!r} is not in a known namespace")
    found = getattr(namespace, attr, None)
    if found is None:
        raise LookupError(f"{name!r} does not exist in torch {torch.__version__}")
    return found


def _plain_tensors(parts: Any) -> bool:
    """Dense, unquantized tensors that are not views (a loaded view loses its base)."""
    return all(
        t.layout == torch.strided
        and not t.is_quantized
        and t._base is None
        and t.device.type == "cpu"
        for t in tensors_in(parts)
    )


def _same(a: Any, b: Any, pairs: dict[int, int]) -> bool:
    """Structural equality that also pins tensor identity, layout and bits."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor):
            return False
        if id(a) in pairs:
            return pairs[id(a)] == id(b)
        if id(b) in pairs.values():
            return False
        pairs[id(a)] = id(b)
        return _same_tensor(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(
            _same(x, y, pairs) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k], pairs) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    try:
        return bool(a == b)
    except Exception:
        return False


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.storage_offset() == b.storage_offset()
        and a.requires_grad == b.requires_grad
        and a.is_leaf == b.is_leaf
        and a.is_conj() == b.is_conj()
        and a.is_neg() == b.is_neg()
        and bytes(a.untyped_storage()) == bytes(b.untyped_storage())
    )


# -- reading ---------------------------------------------------------------------


def load(path: Path, case_id: str) -> Replay | None:
    """The capsule at `path` when it is this case's, for this torch and package."""
    try:
        with path.open("rb") as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about odd pickle protocols
            data = torch.load(handle, weights_only=True)
        return _replay(data, case_id)
    except Exception:  # missing, damaged, crafted or stale: build from OpInfo
        return None


def _replay(data: Any, case_id: str) -> Replay | None:
    if not isinstance(data, dict) or data.get("format") != CAPSULE_FORMAT:
        return None
    if (
        data.get("case_id") != case_id
        or data.get("torch") != str(torch.__version__)
        or data.get("cases") != package_version()
    ):
        return None
    names = data["callables"]
    op = ReplayedOp(
        name=str(data["op"]["name"]),
        variant_test_name=str(data["op"]["variant_test_name"]),
        op=resolve(names["op"]) if names.get("op") else None,
        method_variant=resolve(names["method_variant"])
        if names.get("method_variant")
        else None,
        inplace_variant=resolve(names["inplace_variant"])
        if names.get("inplace_variant")
        else None,
    )
    inp, args, kwargs = data["sample"]
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return None
    sample = ReplayedSample(inp, args, kwargs)
    positions = data["cpu_pinned"]
    if not isinstance(positions, list) or not all(
        type(p) is int and p >= 0 for p in positions
    ):
        return None
    pinned = frozenset(positions)
    error = data.get("error")
    if error is None:
        return Replay(op, sample, pinned)
    error_type = getattr(builtins, str(error["type"]), None)
    if not (isinstance(error_type, type) and issubclass(error_type, BaseException)):
        return None
    return Replay(op, ReplayedError(sample, error_type, str(error["regex"])), pinned)


__all__ = [
    "CAPSULE_FORMAT",
    "Replay",
    "ReplayedError",
    "ReplayedOp",
    "ReplayedSample",
    "all_replayed",
    "capture",
    "load",
    "name_of",
    "replay_for",
    "resolve",
    "use_inputs_from",
]
