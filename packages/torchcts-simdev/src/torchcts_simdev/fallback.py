"""The one kernel behind every op on simdev: run it on CPU payloads.

simdev registers it directly for each overload it implements (`native`), and as the
backend's boxed fallback for the rest (`fallen_back`), which warns the way PyTorch's
MPS CPU fallback does. Both compute alike; only what the dispatcher and the warning
report differs, which is what a harness observes of a real backend's CPU fallback.

This is the hot path of every simdev run, so per-op facts (which arguments are written,
where the generator goes, which fault rules could match) are computed once per overload
and cached; a call with no matching rule pays only for converting its arguments.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from torchcts_simdev import faults
from torchcts_simdev.kernels import (
    EXTRA_WRITES,
    IMPLS,
    copy_to_host,
    first_tensor,
    to_host,
    use_simdev_generator,
)
from torchcts_simdev.native import NativeKernels
from torchcts_simdev.payload import lookup, payload_storage, sync, view_on, wrap
from torchcts_simdev.profile import CLEAN, FaultProfile, FaultRule, ProfileError
from torchcts_simdev.wrapped_numbers import (
    NUMBER_TYPES,
    numbers_pass_through,
    rewrap_number,
)

_CPU = torch.device("cpu")
_Tensor = torch.Tensor
# A C-level type check: isinstance(x, torch.Tensor) runs a Python __instancecheck__.
# Every TensorBase that reaches Python is a torch.Tensor, so typing it as one is true.
_TensorBase: type[torch.Tensor] = torch._C.TensorBase  # type: ignore[assignment]
_Storage = torch.UntypedStorage
_Device = torch.device
# worded as PyTorch's MPS fallback words it (aten/src/ATen/mps/MPSFallback.mm)
FALLBACK_WARNING = (
    "The operator '{op}' is not currently supported on the simdev backend and will "
    "fall back to run on the CPU. This may have performance implications."
)
_MISMATCH_FREE = frozenset(
    ("aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy_", "aten::_to_copy")
)


class _Op:
    """Cached facts about one overload."""

    __slots__ = (
        "convert",
        "generator",
        "impl",
        "index_lists",
        "name",
        "rules",
        "tensor_slots",
        "writes",
    )

    def __init__(self, op: torch._ops.OpOverload, profile: FaultProfile) -> None:
        schema = op._schema
        self.name: str = op.name()  # type: ignore[no-untyped-call]
        self.impl: Callable[..., Any] = IMPLS.get(self.name, op)
        writes: list[int | str] = list(EXTRA_WRITES.get(self.name, ()))
        self.generator: tuple[int, str] | None = None
        index_lists: list[int | str] = []
        tensor_slots: list[int | str] = []
        convert: list[int | str] = []
        for position, arg in enumerate(schema.arguments):
            where: int | str = arg.name if arg.kwarg_only else position
            if arg.alias_info is not None and arg.alias_info.is_write:
                writes.append(where)
            if arg.name == "generator":
                self.generator = (position, arg.name)
            # Tensor?[] (index, index_put, _unsafe_index...): CUDA moves CPU index
            # tensors to the device itself, so they are not a device mismatch
            if str(arg.type) == "List[Optional[Tensor]]":
                index_lists.append(where)
            kind = str(arg.type)
            if kind in ("Tensor", "Optional[Tensor]"):
                tensor_slots.append(where)
            if "Tensor" in kind or "Device" in kind or "Storage" in kind:
                convert.append(where)
        # Only these arguments can hold something to convert; the rest pass as is.
        self.convert = tuple(convert)
        self.writes = tuple(writes)
        # Tensor arguments whose Python numbers (C++ wrapped numbers) need rewrapping:
        # none where the CPU overload's binding wraps numbers itself
        passes = self.impl is op and numbers_pass_through(self.name)
        self.tensor_slots = () if passes else tuple(tensor_slots)
        self.index_lists = frozenset(index_lists)
        self.rules = profile.rules_for(self.name)


class _Call:
    """One call's conversions: which CPU object stands for which argument.

    A tensor passed twice (``x.logical_and_(y)`` arrives as
    ``logical_and.out(x, y, out=x)``) becomes one CPU view, not two: CPU kernels
    tell an in-place call from an out= call by the identity of the tensors
    (TensorIterator marks an output that *is* an input read-write, and refuses to
    resize it where an out= output would be resized), so two views of the same bytes
    would turn a refused in-place broadcast into a silent resize.
    """

    __slots__ = ("foreign", "hints", "pairs", "replaced", "seen")

    def __init__(self) -> None:
        self.replaced: list[object] = []
        self.pairs: list[tuple[object, object]] = []
        self.hints: dict[int, torch.UntypedStorage] = {}
        self.foreign: _Tensor | None = None
        # id of a tensor argument -> what it became (the arguments keep it alive)
        self.seen: dict[int, Any] = {}

    def arg(self, value: Any, cpu_ok: bool = False, clone: bool = False) -> Any:
        if isinstance(value, _TensorBase):
            if value.is_cpu:
                if not cpu_ok and value.dim() != 0:
                    self.foreign = value
                self.pairs.append((value, value))
                return value
            known = None if clone else self.seen.get(id(value))
            if known is None:
                known = self._device_tensor(value, clone)
                if not clone:
                    self.seen[id(value)] = known
            return known
        if isinstance(value, list | tuple) and value:
            return type(value)(self.arg(v, cpu_ok, clone) for v in value)
        if isinstance(value, _Device) and value.type == "simdev":
            return _CPU
        if isinstance(value, _Storage) and value.device.type == "simdev":
            host = payload_storage(value)
            # set_(storage) makes a tensor view it: the result must map back to
            # this very device storage, as a tensor argument's does
            self.hints[host._cdata] = value
            return host
        return value

    def _device_tensor(self, value: _Tensor, clone: bool) -> Any:
        """The CPU view standing for a non-CPU tensor (a scratch copy under `clone`)."""
        storage = value.untyped_storage()
        host = lookup(storage)
        if host is None:
            if value.device.type != "simdev":
                self.foreign = value
                return value
            host = payload_storage(storage)  # raises PayloadMissing
        cpu = view_on(value, host)
        self.hints[host._cdata] = storage
        if clone:
            cpu = cpu.clone()
        self.pairs.append((cpu, value))
        return cpu

    def original(self, cpu: object) -> object:
        for converted, original in self.pairs:
            if converted is cpu:
                return original
        return None

    def aliases_input(self, cpu: _Tensor) -> bool:
        return cpu.untyped_storage()._cdata in self.hints

    def out(self, value: Any) -> Any:
        if isinstance(value, _TensorBase):
            original = self.original(value)
            if original is not None:
                return original
            return wrap(value, self.hints.get(value.untyped_storage()._cdata))
        if isinstance(value, list | tuple):
            return type(value)(self.out(v) for v in value)
        return value


class Fallback:
    """The registered kernel; holds the active profile and the per-overload cache."""

    def __init__(self) -> None:
        self.profile: FaultProfile = CLEAN
        self.natives: NativeKernels | None = None  # set once registered
        # kernels a profile's own_kernel rules register over generic ones
        self.owned: NativeKernels | None = None
        self._ops: dict[torch._ops.OpOverload, _Op] = {}
        # set by a ``poison`` fault: the op and rule that broke the device. Like a
        # sticky driver error it outlives profile switches; only a new process (or a
        # test resetting this attribute) has a working device again.
        self.poisoned: str | None = None
        self._named: dict[str, torch._ops.OpOverload] = {}
        self._warned = False

    def set_profile(self, profile: FaultProfile) -> None:
        """Switch profiles; cached rule lookups are dropped with the old one, and the
        overloads its cpu_fallback rules name lose their simdev kernel."""
        if self.natives is not None:
            self.natives.install(self._left_out(profile, self.natives.names))
            self._own(profile)
        self.profile = profile
        self._ops = {}

    def _own(self, profile: FaultProfile) -> None:
        """Register simdev's kernel for the overloads own_kernel rules name (and drop
        the previous profile's): a fault can only reach a kernel the backend has."""
        if self.owned is not None:
            self.owned.uninstall()
            self.owned = None
        names = profile.own_kernels
        if not names:
            return
        known = set(torch._C._dispatch_get_all_op_names())
        served = set(self.natives.names) if self.natives is not None else set()
        for name in names:
            if name not in known or name in served:
                why = (
                    "is no registered overload"
                    if name not in known
                    else ("already has a simdev kernel")
                )
                raise ProfileError(f"{profile.source}: own_kernel: {name} {why}")
        self.owned = NativeKernels(self.native, names)
        self.owned.install(frozenset())

    @staticmethod
    def _left_out(profile: FaultProfile, names: tuple[str, ...]) -> frozenset[str]:
        rules = profile.fallback_rules
        if not rules:
            return frozenset()
        for rule in rules:
            if not any(rule.matches_name(n) for n in names):
                raise ProfileError(
                    f"{profile.source}: rules[{rule.index}].op: matches no overload "
                    "that simdev serves with a kernel of its own (cpu_fallback takes "
                    "such a kernel away; an overload with a generic kernel never "
                    "reaches a fallback)"
                )
        return frozenset(n for n in names if profile.falls_back(n))

    def native(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The kernel registered for overload `name` itself."""
        op = self._named.get(name)
        if op is None:
            op = self._named[name] = _overload(name)
        return self(op, *args, **kwargs)

    def fallen_back(self, op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
        """The backend fallback: warn as MPS does (once per process, or every time
        under ``torch.set_warn_always(True)``, as TORCH_WARN_ONCE does), then run."""
        if not self._warned or torch.is_warn_always_enabled():
            self._warned = True
            message = FALLBACK_WARNING.format(op=op.name())  # type: ignore[no-untyped-call]
            warnings.warn(message, UserWarning, stacklevel=2)
        return self(op, *args, **kwargs)

    def __call__(self, op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
        if self.poisoned is not None:
            raise faults.poisoned_error(self.poisoned, op.name())  # type: ignore[no-untyped-call]
        info = self._ops.get(op)
        if info is None:
            info = self._ops[op] = _Op(op, self.profile)
        rule = _select(info, args, kwargs) if info.rules else None
        if rule is not None and rule.fault in faults.BEFORE:
            if rule.fault == "poison":
                self.poisoned = faults.poison_origin(rule, info.name, self.profile.name)
            faults.before(rule, info.name, self.profile.name)
        if info.name == "aten::_to_copy" and to_host(kwargs):
            return copy_to_host(args, kwargs)
        drop = rule is not None and rule.fault == "drop_inplace"
        call = _Call()
        lists = info.index_lists
        writes = info.writes
        cargs = list(args)
        ckwargs = dict(kwargs)
        count = len(cargs)
        for where in info.convert:
            if isinstance(where, int):
                if where < count:
                    clone = drop and where in writes
                    cargs[where] = call.arg(cargs[where], where in lists, clone)
            elif where in ckwargs:
                clone = drop and where in writes
                ckwargs[where] = call.arg(ckwargs[where], where in lists, clone)
        if call.foreign is not None and info.name not in _MISMATCH_FREE:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least "
                f"two devices, simdev:0 and {call.foreign.device}! (in {info.name})"
            )
        if info.generator is not None:
            use_simdev_generator(info.generator, cargs, ckwargs)
        for where in info.tensor_slots:
            # C++ callers' wrapped numbers arrive as plain Python numbers.
            if isinstance(where, str):
                number = type(ckwargs.get(where)) in NUMBER_TYPES
            else:
                number = where < count and type(cargs[where]) in NUMBER_TYPES
            if number:
                rewrap_number(where, cargs, ckwargs, writes)
        try:
            result = info.impl(*cargs, **ckwargs)
        except RuntimeError as exc:
            oom = faults.out_of_memory(exc, info.name)
            if oom is None:
                raise
            raise oom from exc
        if rule is not None and rule.fault in faults.AFTER:
            result = _corrupt(rule, result, call)
            if result is None:  # it returns nothing, it writes: a foreach op's out=
                for where in info.writes:
                    _corrupt(rule, _written(where, cargs, ckwargs), call)
        if info.writes and not drop:
            _sync_writes(info.writes, args, kwargs, cargs, ckwargs, call)
        return call.out(result)


def _overload(name: str) -> torch._ops.OpOverload:
    """``aten::add.Tensor`` -> torch.ops.aten.add.Tensor."""
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")
    found: torch._ops.OpOverload = getattr(
        getattr(getattr(torch.ops, namespace), packet), overload or "default"
    )
    return found


def _corrupt(rule: FaultRule, result: Any, call: _Call) -> Any:
    """Apply an output fault, reaching through to written arguments.

    Structured ops reach a backend as their ``.out`` overload, and the generic wrapper
    that called it returns the ``out`` argument, not what the kernel returned; so a
    corrupted written output replaces that argument's data in place.
    """
    if isinstance(result, list | tuple):
        return type(result)(_corrupt(rule, item, call) for item in result)
    if not isinstance(result, _TensorBase):
        return result
    original = call.original(result)
    faulty = faults.transform(
        rule, result, call.aliases_input(result), original is not None
    )
    if faulty is result:
        return result
    if isinstance(original, _TensorBase) and not original.is_cpu:
        original.data = wrap(faulty)
        call.replaced.append(original)
        return result
    return faulty


def _select(
    info: _Op, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> FaultRule | None:
    first = first_tensor(args)
    if first is None:
        first = first_tensor(tuple(kwargs.values()))
    if first is not None:
        dtype: str | None = str(first.dtype).removeprefix("torch.")
        shape: tuple[int, ...] | None = tuple(first.shape)
        expanded = any(
            stride == 0 and size > 1
            for size, stride in zip(first.shape, first.stride(), strict=True)
        )
    else:
        given = kwargs.get("dtype")
        dtype = str(given).removeprefix("torch.") if given is not None else None
        shape = None
        expanded = False
    inplace = _is_inplace(info.writes, args, kwargs)
    for rule in info.rules:
        if rule.matches_call(dtype, shape, inplace, expanded):
            return rule
    return None


def _is_inplace(
    writes: tuple[int | str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bool:
    """Whether a written argument is also read: ``x.add_(y)`` arrives as
    ``add.out(x, y, out=x)``, which only this identity tells apart from ``out=``."""
    written = [
        args[w] if isinstance(w, int) and w < len(args) else kwargs.get(str(w))
        for w in writes
    ]
    if not written:
        return False
    for position, value in enumerate(args):
        if position not in writes and any(value is w for w in written):
            return True
    return False


def _written(where: int | str, cargs: list[Any], ckwargs: dict[str, Any]) -> Any:
    """The CPU stand-in of a written argument (None where the call omitted it)."""
    if isinstance(where, int):
        return cargs[where] if where < len(cargs) else None
    return ckwargs.get(where)


def _sync_writes(
    writes: tuple[int | str, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    cargs: list[Any],
    ckwargs: dict[str, Any],
    call: _Call,
) -> None:
    for where in writes:
        if isinstance(where, int):
            if where >= len(args):
                continue
            device, cpu = args[where], cargs[where]
        else:
            if where not in kwargs:
                continue
            device, cpu = kwargs[where], ckwargs[where]
        if isinstance(device, list | tuple):
            pairs = list(zip(device, cpu, strict=True))
        else:
            pairs = [(device, cpu)]
        for dev, host in pairs:
            if isinstance(dev, _TensorBase) and not dev.is_cpu and dev is not host:
                if any(dev is done for done in call.replaced):
                    continue
                sync(dev, host, call.hints.get(host.untyped_storage()._cdata))
