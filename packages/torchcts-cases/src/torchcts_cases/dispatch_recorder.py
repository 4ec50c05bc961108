"""Record the aten overloads a piece of code dispatches (after composite ops
decompose, i.e. what a backend sees): the coverage trace and explain facts share it,
and `RouteRecorder` follows a device's generic kernels down to the overloads that
reach its backend fallback (CPU-fallback accounting)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# how `route` says an overload has a kernel of the device's own, or reaches the
# backend fallback; any other route is the DispatchKey of the generic kernel serving it
KERNEL = "kernel"
FALLBACK = "fallback"
Route = Callable[[str], object]


def opaque_to_dynamo(*functions: Callable[..., Any]) -> bool:
    """Make torch.compile skip `functions` and everything they call; False when this
    torch has no per-code hook for it.

    A recorder is pushed around device runs that may compile (the compile suite):
    Dynamo must run its hook eagerly, never trace it into a graph. TorchDispatchMode
    would wrap the hook in ``torch._disable_dynamo``, whose first call imports
    torch._dynamo (about a CPU-second, the largest cost of a one-case rerun); the
    frame hook below says the same to Dynamo's C evaluator without that import.
    """
    try:
        from torch._C._dynamo.eval_frame import (
            _FrameAction,
            _FrameExecStrategy,
            set_code_exec_strategy,
        )
    except ImportError:
        return False
    skip = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    for function in functions:
        set_code_exec_strategy(function.__code__, skip)
    return True


def _record(
    self: OverloadRecorder, func: Any, types: Any, args: Any = (), kwargs: Any = None
) -> Any:
    """`OverloadRecorder`'s dispatch hook: note the overload, run it unchanged."""
    self.seen.add(func.name())
    return func(*args, **(kwargs or {}))


def _follow(
    self: RouteRecorder, func: Any, types: Any, args: Any = (), kwargs: Any = None
) -> Any:
    """`RouteRecorder`'s dispatch hook."""
    # the hot path of every watched device run: one dict lookup per call for
    # a kernel of the device's own; names and routes are found once per overload.
    # Keyed by id: OpOverload hashes in Python, and each lives as long as torch
    kwargs = kwargs or {}
    key = id(func)
    known = self._routes.get(key)
    if known is None:
        name = func.name()
        self.seen.add(name)
        known = self._routes[key] = (self._route(name), name)
    route, name = known
    if self._following:  # called by a generic kernel being followed
        args, kwargs = _numbers_as_tensors(func, args, kwargs)
    if route is KERNEL or key in self._following or not self._on_device(args, kwargs):
        return func(*args, **kwargs)
    if route is FALLBACK:
        out = func(*args, **kwargs)
        self.fell_back.add(name)
        return out
    self._following.add(key)
    try:
        with self:  # the generic kernel's own calls come back through this mode
            return func._op_dk(route, *args, **kwargs)
    finally:
        self._following.discard(key)


_OPAQUE_HOOKS = opaque_to_dynamo()  # whether this torch has the per-code hook
_NUMBERS = (bool, int, float, complex)
# an overload's Tensor arguments (position, name), by id as `_follow` keys overloads
_TENSOR_SLOTS: dict[int, tuple[tuple[int, str], ...]] = {}


def _numbers_as_tensors(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A generic kernel's call with its wrapped numbers rebuilt as 0-dim tensors.

    A C++ kernel passes a number to a Tensor argument as a "wrapped number" tensor
    (``remainder.Scalar`` calls ``remainder.Tensor`` so); the mode receives it as a
    plain Python number, which the overload then refuses ("Expected a value of type
    'Tensor'"), and the flag cannot be set again from Python. Overloads whose Python
    binding accepts numbers (add, sub, mul, div) get the number as it is: the binding
    wraps it again, exactly. Elsewhere a 0-dim tensor of the number's own precision
    (float64, int64, complex128) where a dimensioned tensor of the same or a higher
    kind decides the result dtype anyway (kernels read it unrounded, as a wrapped
    number), else of the dtype the wrapped number promotes to (the first tensor's
    when the number's kind is not higher, else the default dtype).
    """
    if torch._C._should_allow_numbers_as_tensors(func.__name__.partition(".")[0]):
        return args, kwargs
    slots = _TENSOR_SLOTS.get(id(func))
    if slots is None:
        slots = _TENSOR_SLOTS[id(func)] = tuple(
            (position, argument.name)
            for position, argument in enumerate(func._schema.arguments)
            if isinstance(argument.type, torch._C.TensorType)
        )
    found = [
        (position, name)
        for position, name in slots
        if type(args[position] if position < len(args) else kwargs.get(name))
        in _NUMBERS
    ]
    if not found:
        return args, kwargs
    reference = next((a for a in args if isinstance(a, torch.Tensor)), None)
    new_args, new_kwargs = list(args), dict(kwargs)
    for position, name in found:
        if position < len(args):
            new_args[position] = _as_tensor(args[position], reference)
        else:
            new_kwargs[name] = _as_tensor(kwargs[name], reference)
    return tuple(new_args), new_kwargs


def _as_tensor(number: Any, reference: torch.Tensor | None) -> torch.Tensor:
    """`number` as the 0-dim tensor a wrapped number of it promotes like."""
    kind = _NUMBERS.index(type(number))  # bool < int < float < complex
    if reference is not None and reference.dim() > 0 and kind <= _kind(reference.dtype):
        # the dimensioned tensor decides the dtype; keep the number unrounded
        natural = (torch.bool, torch.int64, torch.float64, torch.complex128)[kind]
        return torch.tensor(number, dtype=natural)
    if reference is not None and kind <= _kind(reference.dtype):
        return torch.tensor(number, dtype=reference.dtype)
    default = torch.get_default_dtype()
    dtype = (torch.bool, torch.int64, default, default.to_complex())[kind]
    return torch.tensor(number, dtype=dtype)


def _kind(dtype: torch.dtype) -> int:
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype == torch.bool else 1


class EagerDispatchMode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """A dispatch mode whose hook Dynamo never traces, marked by `opaque_to_dynamo`.

    Every TorchCTS mode derives from it: TorchDispatchMode's own way (wrapping the
    hook in ``torch._disable_dynamo``) imports torch._dynamo at the hook's first call,
    about a CPU-second that a run without compile cases never needs otherwise.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        hook = cls.__dict__.get("__torch_dispatch__")
        if isinstance(hook, types.FunctionType):  # marked before torch decides to wrap
            opaque_to_dynamo(hook)
        super().__init_subclass__(**kwargs)  # type: ignore[no-untyped-call]

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """torch's own wrapping only where `opaque_to_dynamo` could not mark the hook."""
        return not _OPAQUE_HOOKS


class OverloadRecorder(EagerDispatchMode):
    """A dispatch mode that notes each overload's name and runs it unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    __torch_dispatch__ = _record


class RouteRecorder(OverloadRecorder):
    """Notes, besides every overload seen, the overloads called with the device's
    tensors that returned through its backend fallback (`fell_back`).

    A dispatch mode sees an overload before the device's kernel for it runs, and
    nothing that kernel calls. A generic (composite) kernel calls further overloads
    the device serves, so such calls on the device are run through that kernel with
    this mode pushed again, and the overloads the backend itself receives are seen:
    ``torch.sin`` reaches a backend as ``aten::sin.out`` through ``aten::sin``'s
    generic kernel. Some kernels call back into the innermost mode themselves
    (``detach`` does, through ``shallow_copy_and_detach``): a call of an overload
    already being followed runs as it would without the mode. An overload that
    raised is not counted: the error fallback of a device (MPS without
    PYTORCH_ENABLE_MPS_FALLBACK) computes nothing.
    """

    def __init__(self, device_type: str, route: Route) -> None:
        super().__init__()
        self.fell_back: set[str] = set()
        self._device_type = device_type
        self._route = route
        self._routes: dict[int, tuple[object, str]] = {}
        self._following: set[int] = set()

    __torch_dispatch__ = _follow

    def _on_device(self, args: Any, kwargs: dict[str, Any]) -> bool:
        """Whether the call dispatches to the device: a tensor on it (a tensor list
        holds them one level down) or, for a factory, a device argument naming it."""
        device_type = self._device_type
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor):
                if not value.is_cpu and value.device.type == device_type:
                    return True
            elif isinstance(value, list | tuple):
                for item in value:
                    if (
                        isinstance(item, torch.Tensor)
                        and not item.is_cpu
                        and item.device.type == device_type
                    ):
                        return True
            elif isinstance(value, torch.device) and value.type == device_type:
                return True
        return False


def overloads_reached(run: Callable[[], object]) -> list[str]:
    """The sorted overloads `run` dispatches (also when it raises part way)."""
    recorder = OverloadRecorder()
    try:
        with recorder:
            run()
    except Exception:  # what ran before the exception was still reached
        pass
    return sorted(recorder.seen)
