"""Record the aten overloads a piece of code dispatches (after composite ops
decompose, i.e. what a backend sees): the coverage trace and explain facts share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class OverloadRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """A dispatch mode that notes each overload's name and runs it unchanged."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.seen: set[str] = set()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: recorded code runs eagerly, and wrapping `__torch_dispatch__` in
        ``torch._disable_dynamo`` would import torch._dynamo (about a CPU-second) at
        the first recording, the largest cost of a one-case rerun's explain facts."""
        return False

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        self.seen.add(func.name())
        return func(*args, **(kwargs or {}))


def overloads_reached(run: Callable[[], object]) -> list[str]:
    """The sorted overloads `run` dispatches (also when it raises part way)."""
    recorder = OverloadRecorder()
    try:
        with recorder:
            run()
    except Exception:  # what ran before the exception was still reached
        pass
    return sorted(recorder.seen)
