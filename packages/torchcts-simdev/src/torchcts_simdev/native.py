"""simdev's own kernels: one direct PrivateUse1 registration per overload that would
otherwise have no kernel for the device, the way a C++ backend registers its kernels.

So the dispatcher says truthfully which overloads simdev implements, and the boxed
backend fallback behind them serves only what a profile's ``cpu_fallback`` rules take
away (and operators registered after simdev was imported). A harness that asks the
dispatcher which kernel serves an overload then sees on simdev what it would see on
a backend with a CPU fallback, with nothing simdev-specific to know.

Registration uses the dispatcher's library handle, which ``torch.library.Library``
wraps: the wrapper's Python bookkeeping is most of the cost for ~1100 overloads
(about 100 ms against 17 ms), and simdev keeps the handles to reset them itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

KEY = "PrivateUse1"


def unserved_overloads() -> tuple[str, ...]:
    """Every registered overload with no PrivateUse1 kernel, direct or generic: what
    a backend fallback would serve. Only meaningful before one is registered."""
    has = torch._C._dispatch_has_computed_kernel_for_dispatch_key
    return tuple(n for n in torch._C._dispatch_get_all_op_names() if not has(n, KEY))


class NativeKernels:
    """The direct registrations of `names`, each calling ``kernel(name, ...)``."""

    def __init__(self, kernel: Callable[..., Any], names: tuple[str, ...]) -> None:
        self.names = names
        self.left_out: frozenset[str] | None = None  # None: nothing installed yet
        self._kernel = kernel
        self._libraries: list[Any] = []

    def install(self, left_out: frozenset[str]) -> None:
        """Register every name except `left_out` (those reach the backend fallback);
        a no-op when the same names are already left out."""
        if left_out == self.left_out:
            return
        for library in self._libraries:
            library.reset()
        libraries: dict[str, Any] = {}
        for name in self.names:
            if name in left_out:
                continue
            namespace, _, overload = name.partition("::")
            library = libraries.get(namespace)
            if library is None:
                library = libraries[namespace] = torch._C._dispatch_library(
                    "IMPL", namespace, "", __file__, 0
                )
            kernel = functools.partial(self._kernel, name)
            library.impl(overload, KEY, kernel, False)
        self._libraries = list(libraries.values())
        self.left_out = left_out

    def uninstall(self) -> None:
        """Drop every registration (the generic kernels serve the names again)."""
        for library in self._libraries:
            library.reset()
        self._libraries = []
        self.left_out = None
