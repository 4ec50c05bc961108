"""compare's assert_close gives torch.testing.assert_close's verdicts and messages."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch
from torchcts_cases import compare as compare_module
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
    (torch.tensor(2.0), torch.tensor(2.0 + 1e-7)),
    (torch.tensor(2.0), torch.tensor(3.0)),
    (torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1, 2])),
    (
        torch.tensor([7, 255], dtype=torch.uint8),
        torch.tensor([7, 254], dtype=torch.uint8),
    ),
    (torch.tensor([1.0, 2.0], device="meta"), torch.tensor([1.0, 5.0], device="meta")),
    (torch.tensor([1.0, 2.0], device="meta"), torch.tensor([1.0, 2.0])),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]).to_sparse()),
    (torch.tensor([[1.0, NAN]]).t(), torch.tensor([[1.0, NAN]]).t()),
]
with warnings.catch_warnings():  # quantized tensors are deprecated, still compared
    warnings.simplefilter("ignore")
    _quantized = torch.quantize_per_tensor(
        torch.tensor([1.0, 2.0]), 0.1, 0, torch.qint8
    )
PAIRS.append((_quantized, _quantized.clone()))
if hasattr(torch, "float8_e4m3fn"):  # compared bit for bit: a tolerance is refused
    PAIRS.append((torch.ones(3).to(torch.float8_e4m3fn),) * 2)


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


def _random_pairs(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs at and around the tolerance, with NaN and Inf, in every common dtype."""
    gen = torch.Generator().manual_seed(20261204)
    dtypes = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
    dtypes += [torch.complex64, torch.int32, torch.uint8, torch.bool]
    pairs = []
    for i in range(count):
        dtype = dtypes[i % len(dtypes)]
        shape = [(), (0,), (5,), (3, 4)][i // len(dtypes) % 4]
        base = torch.randn(shape, generator=gen, dtype=torch.float64) * 10
        step = torch.randn(shape, generator=gen, dtype=torch.float64)
        step *= [0.0, 1e-6, 1e-4, 1e-2, 1.0][i % 5]
        other = base + step
        if i % 7 == 3 and base.numel():
            base.view(-1)[0] = other.view(-1)[0] = [NAN, INF, -INF][i % 3]
        if i % 11 == 5 and base.numel():
            other.view(-1)[-1] = NAN
        if dtype.is_complex:
            pairs.append(
                (
                    torch.complex(base, step).to(dtype),
                    torch.complex(other, step).to(dtype),
                )
            )
        elif dtype.is_floating_point:
            pairs.append((base.to(dtype), other.to(dtype)))
        else:
            pairs.append((base.abs().round().to(dtype), other.abs().round().to(dtype)))
    return pairs


RANDOM_PAIRS = _random_pairs(240)


@pytest.mark.parametrize("atol, rtol", [(1e-5, 1.3e-6), (1e-3, 1e-3), (0.0, 0.0)])
def test_random_pairs_get_torchs_verdict_and_message(atol: float, rtol: float) -> None:
    """Near, far, NaN, Inf, empty and 0-dim pairs in eight dtypes: torch's outcome."""

    def outcome(check: object, a: torch.Tensor, b: torch.Tensor) -> str | None:
        try:
            check(a, b, atol=atol, rtol=rtol)  # type: ignore[operator]
        except AssertionError as exc:
            return str(exc)
        return None

    outcomes = [outcome(assert_close, a, b) for a, b in RANDOM_PAIRS]
    assert outcomes == [outcome(_reference, a, b) for a, b in RANDOM_PAIRS]
    assert 40 < outcomes.count(None) < len(outcomes) - 40  # both verdicts are common


def test_a_close_plain_pair_is_judged_without_the_pair_machinery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What passes is settled by one isclose; only a mismatch builds torch's pairs."""
    calls: list[object] = []

    def machinery(*args: object, **kwargs: object) -> list[object]:
        calls.append(args)
        return []

    monkeypatch.setattr(compare_module, "_NOT_CLOSE", machinery)
    assert_close(torch.ones(4), torch.ones(4), atol=1e-5, rtol=1e-5)
    assert calls == []
    assert_close(torch.ones(4), torch.zeros(4), atol=1e-5, rtol=1e-5)
    assert len(calls) == 1
