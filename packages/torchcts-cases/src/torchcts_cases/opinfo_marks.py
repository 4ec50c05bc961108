"""What PyTorch's own OpInfo tests mark on an op (its ``DecorateInfo`` skips and
expected failures), read for the case policy.

PyTorch reviews its OpInfo entries against its own test suite; a mark there is a
maintainer's statement about the op, so TorchCTS follows it rather than rediscovering
the same facts as false results. Only marks that apply on every device (or on the
CPU, the reference) count; a mark for one accelerator says nothing about the oracle.
The marks are attributes of the OpInfo object, so this module imports nothing from
``torch.testing._internal``.
"""

from __future__ import annotations

import unittest
from typing import Any


def _marks(op: Any, test_name: str) -> list[Any]:
    """The active DecorateInfo entries on `op` for `test_name`, on every dtype and on
    the CPU or every device."""
    return [
        info
        for info in getattr(op, "decorators", ())  # a replayed op carries none
        if getattr(info, "test_name", None) == test_name
        and info.device_type in (None, "cpu")
        and info.dtypes is None
        and info.active_if
    ]


def compare_cpu_skip(op: Any) -> str | None:
    """The reason OpInfo skips ``test_compare_cpu`` for `op` on every device, if it
    does (an expectedFailure marks a known bug: compared and reported as always)."""
    for info in _marks(op, "test_compare_cpu"):
        if info.device_type is not None:
            continue  # a CPU-only skip of a CPU-vs-device test means nothing here
        for decorator in info.decorators:
            if "skip" not in getattr(decorator, "__qualname__", ""):
                continue
            cells = getattr(decorator, "__closure__", None) or ()
            texts = [c.cell_contents for c in cells if isinstance(c.cell_contents, str)]
            return texts[0] if texts else "skipped"
    return None


def errors_marked_failing(op: Any) -> bool:
    """Does PyTorch mark its own ``TestCommon.test_errors`` an expected failure for
    `op` on the CPU? Then some error input of the op is, by PyTorch's review, not an
    error (torch 2.13: ``clamp_max`` and ``clamp_min`` say their right operand
    cannot be a Python scalar, but the ``.Scalar`` overloads take one: "test error
    disabled since rhs non-tensor python scalar is supported")."""
    return any(
        getattr(info, "cls_name", None) in (None, "TestCommon")
        and unittest.expectedFailure in info.decorators
        for info in _marks(op, "test_errors")
    )


__all__ = ["compare_cpu_skip", "errors_marked_failing"]
