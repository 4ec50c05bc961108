"""compare's assert_close gives torch.testing.assert_close's verdicts and messages."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torchcts_cases.compare import assert_close

NAN, INF = float("nan"), float("inf")
PAIRS = [
    (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])),
    (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0])),
    (torch.tensor([NAN, 1.0]), torch.tensor([NAN, 1.0])),
    (torch.tensor([NAN, 1.0]), torch.tensor([0.0, 1.0])),
    (torch.tensor([INF, 1.0]), torch.tensor([-INF, 1.0])),
    (torch.tensor(136), torch.tensor(36)),
    (torch.tensor([True, False]), torch.tensor([True, True])),
    (torch.tensor([1 + 2j, 3j]), torch.tensor([1 + 2j, 3.5j])),
    (torch.arange(6).reshape(2, 3), torch.arange(6).reshape(2, 3).t().contiguous().t()),
    (torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float32)),
    (torch.ones(2, 3), torch.ones(3, 2)),
    (torch.empty(0, 4), torch.empty(0, 4)),
    (torch.full((1000,), 1.0), torch.full((1000,), 1.0 + 1e-3)),
]


def _outcome(check: object, a: torch.Tensor, b: torch.Tensor) -> str | None:
    try:
        check(a, b, atol=1e-5, rtol=1.3e-6)  # type: ignore[operator]
    except AssertionError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _reference(a: torch.Tensor, b: torch.Tensor, *, atol: float, rtol: float) -> None:
    torch.testing.assert_close(
        a, b, atol=atol, rtol=rtol, equal_nan=True, check_stride=False
    )


@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_same_verdict_and_message_as_torch(pair: int) -> None:
    """Each pair: both pass, or both fail with the same exception text."""
    a, b = PAIRS[pair]
    assert _outcome(assert_close, a, b) == _outcome(_reference, a, b)


def test_a_tensor_subclass_goes_through_torch_itself() -> None:
    """Only exact torch.Tensor takes the direct path (a subclass could be a DTensor)."""

    class Sub(torch.Tensor):
        pass

    a = torch.tensor([1.0, 2.0]).as_subclass(Sub)
    b = torch.tensor([1.0, 2.5])
    assert _outcome(assert_close, a, b) == _outcome(_reference, a, b)


def test_plain_tensors_never_import_the_distributed_package() -> None:
    """The point of the direct path: no torch.distributed.tensor at the first compare."""
    code = (
        "import sys, torch\n"
        "from torchcts_cases.compare import compare\n"
        "compare(torch.tensor([1.0]), torch.tensor([2.0]))\n"
        "print('torch.distributed.tensor' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
