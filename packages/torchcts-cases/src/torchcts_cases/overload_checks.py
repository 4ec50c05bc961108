"""What a generated overload case observes on one device: the call, and the property
its variant is about, each under a key that names the property.

Every function takes the CPU arguments of the call (`overload_capture`), moves them
to the device itself and returns observations copied back to the host; the CPU run
of the same function is the expectation. A property that holds is ``True``; one
that breaks is the sentence saying how (`suites.base.holds`), so a mismatch reads
``add_.Tensor.in-place returns self: expected bool True, got str '...'``.

Variants: ``call`` and ``backward`` (the overload called directly), ``out`` (an out=
call into outs of the right shape: values, returns out, keeps the out's storage),
``out_resize`` (an empty out and a wrong-shape out, both resized), ``out_dtype`` (an
out of a dtype the result cannot be cast to: refused as the CPU refuses it, or
accepted as it accepts it), ``inplace`` (returns self, keeps and writes self's
storage, a view taken before the call sees the write; a foreach op's self is a list,
written tensor by tensor, and it returns nothing), ``writes`` (an overload that
writes several arguments, a fused optimizer step or ``_amp_update_scale.out``: every
written argument's values after the call, its outs and that it returns them).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchcts_cases.compare import RaisedError
from torchcts_cases.overload_capture import Call
from torchcts_cases.overload_schema import op_overload, out_arguments, schema
from torchcts_cases.suites.base import holds, storage_id
from torchcts_cases.transfer import tensors_in, to_device, to_host

VARIANT_KEYS = {
    "call": ("result",),
    "backward": ("backward result",),
    "out": ("out= result", "out= returns out", "out= keeps the out's storage"),
    "out_resize": ("out= resizes an empty out", "out= resizes a wrong-shape out"),
    "out_dtype": ("out= of a wrong dtype",),
    "inplace": (
        "in-place returns self",
        "in-place keeps self's storage",
        "in-place storage written",
        "in-place write seen by a view",
    ),
    "writes": ("writes: result", "writes: returns out", "writes: out"),
}
WRITTEN_PREFIX = "writes: argument "  # + the argument's name, one key each
# arguments PyTorch takes on the host whatever the device, as its Python API passes
# them (pack_padded_sequence makes its lengths a CPU tensor; a foreach op's tensor of
# scalars is read on the host: "Expected scalars to be on CPU"): they stay on the CPU
HOST_ARGUMENTS = {
    "_pack_padded_sequence": frozenset(["lengths"]),
    "_foreach_addcdiv.Tensor": frozenset(["scalars"]),
    "_foreach_addcmul.Tensor": frozenset(["scalars"]),
}
# (observation key, the device's exception) -> is it a missing kernel, not a result
Unsupported = Callable[[str, BaseException], bool]


def wrong_dtype(dtype: torch.dtype) -> torch.dtype | None:
    """A dtype a result of `dtype` cannot be cast into (PyTorch's out= rule refuses
    it), or None for bool, which casts into every dtype."""
    if dtype.is_floating_point or dtype.is_complex:
        return torch.int64
    return None if dtype == torch.bool else torch.bool


def observe(
    variant: str,
    target: str,
    functional: str,
    call: Call,
    device: str,
    unsupported: Unsupported = lambda key, exc: False,
    fill: float | None = None,
) -> dict[str, Any]:
    """The observations of one variant on `device` (host copies). Outs are
    uninitialised (`torch.empty`), as a caller's would be, unless `fill` says what
    they hold (the index build's check that no kernel reads its out)."""
    args, kwargs = to_device(  # always copies: the call stays as it was
        call, device, keep_on_cpu=_host_ids(functional, call)
    )
    if variant in ("call", "backward"):
        result = op_overload(target)(*args, **kwargs)
        return {VARIANT_KEYS[variant][0]: to_host(result)}
    if variant == "inplace":
        return _inplace(target, args, kwargs)
    if variant == "writes":
        return _writes(target, functional, args, kwargs, fill)
    template = op_overload(functional)(*args, **kwargs)
    names = out_arguments(target)
    # a factory's out= overload takes no dtype or device: the out tensor says them
    taken = {a.name for a in schema(target).arguments}
    kwargs = {k: v for k, v in kwargs.items() if k in taken}
    if variant == "out":
        return _out(target, args, kwargs, names, template, fill)
    keys = VARIANT_KEYS.get(variant, ())

    def attempt(
        key: str, shape: tuple[int, ...] | None, dtype: torch.dtype | None
    ) -> object:
        device_ = _device_of(args, kwargs)
        outs = _outs_like(template, names, device_, shape, dtype, fill)
        return _attempt(target, args, kwargs, names, outs, key, unsupported)

    if variant == "out_resize":
        numel = max((t.numel() for t in tensors_in(template)), default=0)
        return {
            keys[0]: attempt(keys[0], (0,), None),
            keys[1]: attempt(keys[1], (numel + 1,), None),
        }
    if variant == "out_dtype":
        refused = wrong_dtype(tensors_in(template)[0].dtype)
        assert refused is not None  # the index generates out_dtype only then
        return {keys[0]: attempt(keys[0], None, refused)}
    raise ValueError(f"unknown overload-case variant {variant!r}")


def _host_ids(functional: str, call: Call) -> frozenset[int]:
    """The ids of the call's tensors that stay on the CPU (`HOST_ARGUMENTS`)."""
    names = HOST_ARGUMENTS.get(functional)
    if not names:
        return frozenset()
    args, kwargs = call
    found = [
        args[i] if i < len(args) else kwargs.get(a.name)
        for i, a in enumerate(schema(functional).arguments)
        if a.name in names
    ]
    return frozenset(id(t) for t in found if isinstance(t, torch.Tensor))


def _inplace(
    target: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    self_ = args[0]
    selves = self_ if isinstance(self_, list) else [self_]  # foreach: a list
    views = [t.view(t.shape) for t in selves]
    before = [storage_id(t) for t in selves]
    returned = op_overload(target)(*args, **kwargs)
    keys = VARIANT_KEYS["inplace"]
    first = returned[0] if isinstance(returned, tuple | list) else returned
    if isinstance(self_, list):  # a foreach op's schema returns nothing
        returns_self = holds(
            returned is None, f"returned a {type(returned).__name__}, not nothing"
        )
    else:
        returns_self = holds(
            first is self_, f"returned a {type(first).__name__} that is not self"
        )
    return {
        keys[0]: returns_self,
        keys[1]: holds(
            [storage_id(t) for t in selves] == before,
            "self was re-pointed at another storage",
        ),
        keys[2]: to_host(self_),
        keys[3]: to_host(views if isinstance(self_, list) else views[0]),
    }


def _writes(
    target: str,
    functional: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fill: float | None,
) -> dict[str, Any]:
    """An overload writing several arguments: each written argument after the
    call, and its outs (shaped as the results of `functional`, which computes
    them without out=) with whether it returned them."""
    names = out_arguments(target)
    outs: dict[str, Any] = {}
    if names:
        template = op_overload(functional)(*_fresh(args), **_fresh(kwargs))
        if len(schema(functional).returns) > 1:  # its first results are the outs
            template = tuple(template)[: len(names)]
            template = template[0] if len(names) == 1 else template
        outs = _outs_like(template, names, _device_of(args, kwargs), None, None, fill)
    returned = op_overload(target)(*args, **kwargs, **outs)
    keys = VARIANT_KEYS["writes"]
    observed: dict[str, Any] = {}
    if names:
        passed = tensors_in([outs[n] for n in names])
        got = tensors_in(returned)
        observed[keys[1]] = holds(
            not got
            or (
                len(got) == len(passed)
                and all(a is b for a, b in zip(got, passed, strict=True))
            ),
            "did not return the out tensors it was given",
        )
        observed[keys[2]] = to_host([outs[n] for n in names])
    else:
        observed[keys[0]] = to_host(returned)
    for position, argument in enumerate(schema(target).arguments):
        if argument.is_out or not (
            argument.alias_info and argument.alias_info.is_write
        ):
            continue
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        observed[WRITTEN_PREFIX + argument.name] = to_host(value)
    return observed


def _fresh(value: Any) -> Any:
    """A copy of a call's arguments on their own device (the functional that
    shapes the outs must not touch what the overload itself is given)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        return type(value)(_fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _outs_like(
    template: Any,
    names: Sequence[str],
    device: str,
    shape: tuple[int, ...] | None,
    first_dtype: torch.dtype | None,
    fill: float | None = None,
) -> dict[str, Any]:
    """out= tensors for `template` (the functional result): its shapes and dtypes,
    or all of `shape`, the first of `first_dtype`; uninitialised, or all `fill`.
    Each out is on `device`, except where the functional's result is on the CPU
    (pack_padded_sequence's batch sizes): an out must be where its result is."""
    made = 0

    def one(t: torch.Tensor) -> torch.Tensor:
        nonlocal made
        dtype = first_dtype if first_dtype is not None and made == 0 else t.dtype
        made += 1
        size = t.shape if shape is None else shape
        where = "cpu" if t.device.type == "cpu" else device
        if fill is not None:
            return torch.full(size, fill, dtype=dtype, device=where)
        return torch.empty(size, dtype=dtype, device=where)

    if len(names) == 1:
        value = template
        if isinstance(value, list | tuple):
            return {names[0]: [one(t) for t in value]}
        return {names[0]: one(value)}
    return {name: one(t) for name, t in zip(names, template, strict=True)}


def _out(
    target: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    names: Sequence[str],
    template: Any,
    fill: float | None,
) -> dict[str, Any]:
    outs = _outs_like(template, names, _device_of(args, kwargs), None, None, fill)
    before = [storage_id(t) for t in tensors_in(outs)]
    returned = op_overload(target)(*args, **kwargs, **outs)
    passed = tensors_in([outs[n] for n in names])
    got = tensors_in(returned)
    keys = VARIANT_KEYS["out"]
    if not schema(target).returns:  # a foreach op's out= returns nothing
        returns_out = holds(
            returned is None, f"returned a {type(returned).__name__}, not nothing"
        )
    else:
        returns_out = holds(
            len(got) == len(passed)
            and all(a is b for a, b in zip(got, passed, strict=True)),
            "did not return the out tensors it was given",
        )
    return {
        keys[0]: to_host([outs[n] for n in names]),
        keys[1]: returns_out,
        keys[2]: holds(
            [storage_id(t) for t in tensors_in(outs)] == before,
            "an out of the right shape was given other storage",
        ),
    }


def _attempt(
    target: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    names: Sequence[str],
    outs: dict[str, Any],
    key: str,
    unsupported: Unsupported,
) -> object:
    """The outs after an out= call into badly shaped or typed outs, or the error it
    raised (a device's missing kernel is raised on: it is no result)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resizing a non-empty out warns
            op_overload(target)(*args, **kwargs, **outs)
    except Exception as exc:
        if unsupported(key, exc):
            raise
        return RaisedError.of(exc)
    return to_host([outs[n] for n in names])


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    found = tensors_in([list(args), kwargs])
    return str(found[0].device) if found else "cpu"


def unsupported_against(expected: object, patterns: Sequence[str]) -> Unsupported:
    """An `Unsupported` test: the device's error matches one of the manifest's
    unsupported patterns and the CPU's own error under the same key (`expected`,
    the CPU's observations) does not."""

    def test(key: str, exc: BaseException) -> bool:
        want = expected.get(key) if isinstance(expected, dict) else None
        said = (
            f"{want.type_name}: {want.message}" if isinstance(want, RaisedError) else ""
        )
        text = f"{type(exc).__name__}: {exc}"
        return any(re.search(p, text) and not re.search(p, said) for p in patterns)

    return test
