"""Import and configure the backend under test, once per process that executes cases.

The contract: import ``manifest.backend_import`` (if set) and, when the module has
``torchcts_configure(options)``, call it with ``manifest.backend_options``. A failure
is remembered, so every case in this process reports the same configuration error
instead of retrying the import thousands of times.
"""

from __future__ import annotations

import importlib
from typing import Any

_STATE: dict[tuple[str, str], str | None] = {}


def _key(module: str, options: dict[str, Any]) -> tuple[str, str]:
    return module, repr(sorted(options.items()))


def ensure_backend(module: str | None, options: dict[str, Any]) -> str | None:
    """Import and configure `module`; None when ready, else the problem in one line."""
    if not module:
        return None
    key = _key(module, options)
    if key in _STATE:
        return _STATE[key]
    problem: str | None = None
    try:
        imported = importlib.import_module(module)
        configure = getattr(imported, "torchcts_configure", None)
        if callable(configure):
            configure(dict(options))
    except (Exception, SystemExit) as exc:  # any failure is a configuration error
        problem = f"backend import {module!r} failed: {type(exc).__name__}: {exc}"
    _STATE[key] = problem
    return problem


__all__ = ["ensure_backend"]
