"""Which overloads of a case ran through a CPU fallback on the device.

PyTorch makes this observable in two ways, and a case's device run watches both:

- The dispatcher says which kernel serves an overload for a dispatch key: one the
  backend registered for it, a generic (composite) kernel, or the boxed *backend
  fallback* that a backend registers for every overload it has no kernel for. MPS
  (with ``PYTORCH_ENABLE_MPS_FALLBACK=1``), XPU and out-of-tree PrivateUse1 backends
  install ``at::native::cpu_fallback`` there, which copies the arguments to the CPU,
  runs the CPU kernel and copies back. A dispatch mode (`RouteRecorder`) notes the
  overloads called with device tensors that returned through it.
- Fallbacks warn: MPS and XPU say "The operator 'aten::foo' is not currently supported
  on the MPS backend and will fall back to run on the CPU". That catches ops a
  backend registers its CPU fallback for by name (MPS does so for ``linalg_svd``,
  ``col2im`` and a few more), which the dispatcher reports as kernels. The warning is
  TORCH_WARN_ONCE, once per process, so the watch turns ``torch.set_warn_always`` on
  for the run; the warnings are shown again afterwards, as they would have been.
  A backend warns as it hands the overload to the CPU, so a warned overload counts
  even when the CPU kernel then raised; a dispatcher route counts only one that
  returned (an error fallback computes nothing).

The dispatch mode stays off the device's autograd threads: a backward pass of device
tensors runs on the engine's thread for that device, which inherits the caller's
dispatch modes, and an exception raised through a Python mode there ends the process
(``terminate called without an active exception``: a backend kernel that raises in a
backward pass, such as a missing kernel, became a crash of the whole run). While the
engine runs, the watch's mode is taken off the stack (`_mode_off_in_backward`); a
backward kernel's fallback is then seen only through its warning.

Devices without a backend fallback (CUDA, ROCm, CPU) cannot fall back: the watch
does nothing there and costs nothing. The meta device is left out (its fallback is
no CPU fallback, and a meta run has no values).
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from functools import cache
from types import TracebackType
from typing import Any

import torch

from torchcts_cases.dispatch_recorder import FALLBACK, KERNEL, RouteRecorder

# the PyTorch wording (MPS, XPU: "...will fall back..." / "...is falling back...";
# XPU's debug wording leaves the closing quote out)
FALLBACK_WARNING = re.compile(
    r"The operator '(?P<op>[A-Za-z0-9_]+::[A-Za-z0-9_.]+)'?[^\n]*?"
    r"fall(?:s|ing)? back to run on the CPU"
)
# a `warnings` filter matches a message's start: these always reach the watch
_WARNING_START = r"The operator '"
# the generic kernels a backend key takes when it has none of its own, in the
# dispatcher's order of precedence (OperatorEntry::computeDispatchTableEntry)
_GENERIC = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)
_NEVER = frozenset(("cpu", "meta"))


def kernel_route(name: str, key: str) -> object:
    """How overload `name` is served for dispatch key `key`: `KERNEL` (registered
    for the key), the DispatchKey of the generic kernel, `FALLBACK` (the key's
    backend fallback), or None (nothing: calling it raises).

    Kept per process, but a backend may register or drop a kernel of its own after
    the route was found (simdev does as fault profiles change), so each use checks
    that one fact again: a stale "generic" route would have the watch run the generic
    kernel itself, past the backend's own.
    """
    own = torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
    found = _ROUTES.get((name, key), _UNKNOWN)
    if found is _UNKNOWN or (found is KERNEL) != own:
        found = _ROUTES[(name, key)] = _route(name, key, own)
    return found


def _route(name: str, key: str, own: bool) -> object:
    if own:
        return KERNEL
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for generic in _GENERIC:
        if has(name, generic):
            return getattr(torch._C.DispatchKey, generic)
    if torch._C._dispatch_has_backend_fallback(getattr(torch._C.DispatchKey, key)):
        return FALLBACK
    return None


_ROUTES: dict[tuple[str, str], object] = {}
_UNKNOWN = object()


@cache
def fallback_key(device: str) -> str | None:
    """The dispatch key of `device` when it has a backend fallback, else None."""
    device_type = device.partition(":")[0]
    if device_type in _NEVER:
        return None
    try:
        key = torch._C._dispatch_key_for_device(device_type)
        fallback = torch._C._dispatch_has_backend_fallback(
            getattr(torch._C.DispatchKey, key)
        )
    except (RuntimeError, AttributeError):  # not a device type this torch knows
        return None
    return key if fallback else None


def warned_overloads(messages: list[str]) -> set[str]:
    """The overloads that fallback warnings among `messages` name."""
    found = set()
    for message in messages:
        match = FALLBACK_WARNING.search(message)
        if match is not None:
            found.add(match["op"])
    return found


class FallbackWatch:
    """A context manager around a case's device run; afterwards `overloads` holds
    the sorted overloads that ran through a CPU fallback (empty when none did, or
    when the device cannot fall back)."""

    def __init__(self, device: str) -> None:
        self.overloads: tuple[str, ...] = ()
        self._key = fallback_key(device)
        self._device_type = device.partition(":")[0]
        self._recorder: RouteRecorder | None = None
        self._catcher: warnings.catch_warnings[list[warnings.WarningMessage]] | None
        self._catcher = None
        self._caught: list[warnings.WarningMessage] = []
        self._warn_always = False
        self._backward: contextlib.AbstractContextManager[None] | None = None

    def __enter__(self) -> FallbackWatch:
        if self._key is None:
            return self
        key = self._key
        self._recorder = RouteRecorder(
            self._device_type, lambda n: kernel_route(n, key)
        )
        self._catcher = warnings.catch_warnings(record=True)
        self._caught = self._catcher.__enter__()
        # ahead of the copied filters, for messages that start like a fallback
        # warning only: every other warning meets the filters it always met
        warnings.filterwarnings("always", message=_WARNING_START)
        self._warn_always = torch.is_warn_always_enabled()
        torch.set_warn_always(True)
        self._recorder.__enter__()  # type: ignore[no-untyped-call]
        self._backward = _mode_off_in_backward(self._recorder)
        self._backward.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._recorder is None or self._catcher is None:
            return
        try:
            if self._backward is not None:
                self._backward.__exit__(kind, exc, tb)
            self._recorder.__exit__(kind, exc, tb)  # type: ignore[no-untyped-call]
        finally:
            torch.set_warn_always(self._warn_always)
            self._catcher.__exit__(kind, exc, tb)
        caught = self._caught
        found = self._recorder.fell_back | warned_overloads(
            [str(w.message) for w in caught]
        )
        self.overloads = tuple(sorted(found))
        for w in caught:  # shown as they would have been without the watch
            # an outer "error" filter may turn a fallback warning into an exception
            # here: the fallback is accounted for in the record instead
            with contextlib.suppress(Exception):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def _mode_off_in_backward(mode: RouteRecorder) -> Iterator[None]:
    """While the block runs, every autograd engine call (``backward``, ``grad``)
    runs with `mode` off the dispatch-mode stack when it is the innermost mode (the
    module docstring says why); a mode entered after it (a compiler's tracing)
    keeps the stack as it is."""
    import torch.autograd as autograd
    from torch.utils._python_dispatch import (
        _get_current_dispatch_mode,
        _pop_mode_temporarily,
    )

    # the one function torch.autograd.backward and .grad both call the engine through
    original = getattr(autograd, "_engine_run_backward", None)
    if original is None:  # another torch: nothing to wrap, the mode stays on
        yield
        return

    def run_backward(*args: Any, **kwargs: Any) -> Any:
        if _get_current_dispatch_mode() is not mode:
            return original(*args, **kwargs)
        with _pop_mode_temporarily():
            return original(*args, **kwargs)

    setattr(autograd, "_engine_run_backward", run_backward)  # noqa: B010
    try:
        yield
    finally:
        setattr(autograd, "_engine_run_backward", original)  # noqa: B010


@contextlib.contextmanager
def route_recorder_off() -> Iterator[None]:
    """The watch's dispatch mode off the stack while the block runs, when it is the
    innermost mode: for a call PyTorch computes differently under any dispatch mode
    (a reviewed upstream defect, `torchcts_cases.upstream_defects.MODE_DEFECTS`).
    A fallback in the block is then seen only through its warning."""
    from torch.utils._python_dispatch import (
        _get_current_dispatch_mode,
        _pop_mode_temporarily,
    )

    if not isinstance(_get_current_dispatch_mode(), RouteRecorder):
        yield
        return
    with _pop_mode_temporarily():
        yield


def watch_fallbacks(device: str) -> FallbackWatch:
    """A `FallbackWatch` for a run on `device` (the case source's optional hook)."""
    return FallbackWatch(device)
