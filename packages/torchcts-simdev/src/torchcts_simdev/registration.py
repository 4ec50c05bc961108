"""Register the ``simdev`` device with PyTorch, once per process.

PrivateUse1 can be renamed only once, and a second fallback registration would fail,
so the registration is remembered on the torch module itself: re-importing or reloading
torchcts_simdev finds it instead of registering twice. torch.library's API is untyped,
hence the ignores below.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

from torchcts_simdev.autocast import lower_precision_kernel, register_autocast
from torchcts_simdev.device import SimdevModule
from torchcts_simdev.fallback import Fallback
from torchcts_simdev.kernels import EXPLICIT_OPS
from torchcts_simdev.native import NativeKernels, unserved_overloads

DEVICE = "simdev"


def register() -> Fallback:
    """Make PrivateUse1 the ``simdev`` device, register a kernel for every overload
    it has none for, and the backend fallback behind them, once."""
    # The registration lives on the torch module, so a reloaded or re-imported
    # torchcts_simdev finds it instead of failing to rename PrivateUse1 twice.
    existing: Fallback | None = getattr(torch, "_torchcts_simdev_fallback", None)
    if existing is not None:
        return existing
    if torch._C._get_privateuse1_backend_name() != DEVICE:
        _setup_privateuseone_for_python_backend(DEVICE, backend_module=SimdevModule())
    fallback = Fallback()
    # before the backend fallback: afterwards every overload has a computed kernel
    fallback.natives = NativeKernels(fallback.native, unserved_overloads())
    fallback.natives.install(frozenset())
    library = torch.library.Library("_", "IMPL")  # type: ignore[no-untyped-call]
    library.fallback(fallback.fallen_back, "PrivateUse1")  # type: ignore[no-untyped-call]
    # copy_'s generic kernel resolves lazy conjugation by cloning, which copies again
    # (endlessly) on a backend without its own copy_: give simdev one.
    kernels = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    copy = torch.ops.aten.copy_.default
    kernels.impl(  # type: ignore[no-untyped-call]
        "copy_", functools.partial(fallback, copy), "PrivateUse1"
    )
    for name in EXPLICIT_OPS:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        kernels.impl(  # type: ignore[no-untyped-call]
            name, functools.partial(fallback, op), "PrivateUse1"
        )
    _opaque_to_dynamo(
        Fallback.__call__,
        Fallback.native,
        Fallback.fallen_back,
        lower_precision_kernel(),
    )
    torch._torchcts_simdev_fallback = fallback  # type: ignore[attr-defined]
    torch._torchcts_simdev_library = (  # type: ignore[attr-defined]
        library,
        kernels,
        *register_autocast(),
    )
    return fallback


def _opaque_to_dynamo(*kernels: Callable[..., Any]) -> None:
    """Make Dynamo skip simdev's Python kernels, and everything they call.

    torch.compile's frame hook stays set while a compiled function runs eager code (at
    a graph break, an op Dynamo cannot trace); Dynamo would then trace simdev's kernels
    as user code, making graphs of simdev's internals and graph breaks no native
    backend has. A native backend's kernels are opaque to Dynamo, and so are these.
    """
    try:
        from torch._C._dynamo.eval_frame import (
            _FrameAction,
            _FrameExecStrategy,
            set_code_exec_strategy,
        )
    except ImportError:  # a torch without the hook: Dynamo may trace simdev's kernels
        return
    skip = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    for kernel in kernels:
        set_code_exec_strategy(kernel.__code__, skip)
