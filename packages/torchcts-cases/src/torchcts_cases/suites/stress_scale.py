"""Stress by scale: thousands of small allocations, a 300-op chain, and one tensor
sized from the manifest's memory limit.

A backend's allocator, its queue of pending work and its index arithmetic are only
exercised by volume: a freed block handed out while a live tensor still uses it, a lazy
backend that drops or reorders ops deep in a long chain, an elementwise kernel or a
reduction whose 32-bit index wraps before the end of a large tensor. The expectation is
the CPU run of the same check. The chain's float32 result is judged with the documented
`CHAIN_TOLERANCE`; the large tensor is judged by spot values and reductions, never by
copying it to the CPU (which would double the memory it needs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case, storage_id
from torchcts_cases.suites.limits import run_limits

SUITE = "stress"
ALLOCATIONS = 1024  # small tensors per round; two rounds, half of the first kept
CHAIN_LENGTH = 300
CHECKPOINT = 50  # the chain's value is observed every CHECKPOINT ops
# (dtype, atol, rtol) for the float32 chain: each op is norm-preserving or a mild
# nonlinearity on values below 1 (Lipschitz about 1), so rounding differences add up
# without growing. Measured over the 300 ops: float32 drifts 1.3e-6 from float64,
# random noise of 1 ulp per op 4e-6 and of 8 ulp per op (fast-math transcendental
# functions) 3e-5. A wrong op fails it; one off by 1e-4 may not (the chain's mean
# subtractions remove a constant shift): OpInfo's per-op cases judge that precision
CHAIN_TOLERANCE = (("float32", 1e-4, 1e-4),)
# The large tensor takes 1/LARGE_FRACTION of the manifest's RESOURCE_LIMITS memory_mb,
# never more (one uint8 element per byte, so the most elements for the memory); the
# CPU run of the same check holds an equal tensor at another time, and nothing else
# the check allocates is larger than 1/ROW of it. Without a memory_mb: DEFAULT_LARGE_MB.
LARGE_FRACTION = 16
DEFAULT_LARGE_MB = 64
ROW = 4096


def _stress(name: str, level: int = 7, **kwargs: Any) -> Callable[..., Any]:
    """A case of this suite, judged against the CPU run of the same check."""
    return case(SUITE, name, level, source=ExpectedSource.CPU_REFERENCE, **kwargs)


@case(
    SUITE,
    "many_small_allocations",
    7,
    source=ExpectedSource.PROPERTY,
    surfaces=("aten::empty.memory_format", "aten::fill_.Scalar"),
)
def many_small_allocations(device: str, dtype: str | None) -> dict[str, Any]:
    """Thousands of small tensors created and freed: every live one keeps the value
    it was made with and its own storage while the freed memory is handed out again
    and written by new tensors (tensor i holds i: a property, the same on CPU)."""
    live = []
    for i in range(ALLOCATIONS):
        dtype_i = torch.float32 if i % 4 == 0 else torch.int64
        t = torch.full((1 + i % 7,), i, dtype=dtype_i, device=device)
        if i % 2 == 0:
            live.append(t)  # odd ones are freed when t is rebound
    for i in range(ALLOCATIONS):
        scratch = torch.full((1 + i % 7,), -1, device=device)
        scratch.mul_(3)  # a write into memory a freed tensor may have had
    empties = [torch.empty(0, device=device) for _ in range(64)]
    del scratch
    return {
        "live": len(live),
        "own_storage": len({storage_id(t) for t in live}),
        "values": torch.cat([t.to(torch.float32) for t in live]),
        "sums": torch.stack([t.sum().to(torch.float32) for t in live[::16]]),
        "empty_numel": sum(e.numel() for e in empties),
    }


Op = Callable[[torch.Tensor], torch.Tensor]


def _float_ops(device: str) -> list[Op]:
    """Norm-preserving ops and nonlinearities near the identity on values below 1;
    two renormalisations keep the values from shrinking to a fixed point."""
    generator = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(
        torch.randn(16, 16, generator=generator, dtype=torch.float64)
    )
    m = q.to(torch.float32).to(device)
    return [
        lambda x: x @ m,
        torch.tanh,
        lambda x: x.t(),
        lambda x: x.roll(3, dims=1),
        torch.sin,
        lambda x: torch.where(x > 0, x, x * 0.9),
        lambda x: x - x.mean(dim=1, keepdim=True),
        lambda x: x.flip(0),
        F.elu,
        torch.neg,
        torch.atan,
        lambda x: x * (0.3 / x.std()),
        lambda x: x + 0.01,
        lambda x: torch.softmax(x, dim=1) * 16 - 1,
        lambda x: x * (0.3 / x.std()),
    ]


PRIME = 1_000_003


def _int_ops(device: str) -> list[Op]:
    """Exact int64 ops kept below PRIME**2 (no overflow): the result is exact."""
    order = torch.tensor([3, 1, 4, 0, 5, 9, 2, 6, 8, 7, 11, 10]).to(device)
    return [
        lambda x: (x * 31 + 7) % PRIME,
        lambda x: x ^ (x >> 3),
        lambda x: x.roll(5, dims=1),
        lambda x: x.t(),
        lambda x: x.cumsum(0) % PRIME,
        lambda x: x.flip(1),
        lambda x: torch.where(x % 2 == 0, x // 2, 3 * x + 1) % PRIME,
        lambda x: (x + x.amax(dim=1, keepdim=True)) % PRIME,
        lambda x: (x * x) % PRIME,
        lambda x: x.sort(dim=1).values,
        lambda x: x.index_select(0, order),
        lambda x: x.bitwise_and(0xFFFFF),
    ]


def _chain(x: torch.Tensor, ops: list[Op]) -> dict[str, torch.Tensor]:
    """CHAIN_LENGTH ops applied in turn; the value after every CHECKPOINT of them."""
    seen = {}
    for step in range(1, CHAIN_LENGTH + 1):
        x = ops[(step - 1) % len(ops)](x)
        if step % CHECKPOINT == 0:
            seen[f"after_{step:03d}"] = x
    return seen


@_stress("long_op_chain", tolerances=CHAIN_TOLERANCE, surfaces=("aten::mm",))
def long_op_chain(device: str, dtype: str | None) -> dict[str, Any]:
    """300 chained ops on a 16x16 float32 tensor (matmul, transcendental, reduction,
    view and shuffle ops in turn) and 300 on a 12x12 int64 one (exact) match the same
    chains on CPU at every 50th op: a mismatch names the first checkpoint off."""
    torch.manual_seed(1)
    x0 = (0.3 * torch.randn(16, 16, dtype=torch.float64)).to(torch.float32)
    start = x0.to(device)
    ints = (torch.arange(144, dtype=torch.int64).reshape(12, 12) * 7919) % PRIME
    return {
        "float32": _chain(start, _float_ops(device)),
        "int64": _chain(ints.to(device), _int_ops(device)),
    }


def large_numel_size() -> int:
    """Elements of the large case's uint8 tensor: 1/LARGE_FRACTION of memory_mb (or
    DEFAULT_LARGE_MB), in whole rows of ROW."""
    memory_mb = run_limits().memory_mb
    mb = memory_mb / LARGE_FRACTION if memory_mb else DEFAULT_LARGE_MB
    return max(ROW, int(mb * 2**20) // ROW * ROW)


@_stress(
    "large_numel",
    8,
    surfaces=("aten::add_.Tensor", "aten::argmax", "aten::count_nonzero"),
)
def large_numel(device: str, dtype: str | None) -> dict[str, Any]:
    """A uint8 tensor of 1/16 of the manifest's memory_mb: a strided write, a write
    at its far end, in-place ops over every element, and reductions (count, max,
    first argmax, sum mod 256, per-row max) and spot values that only agree with CPU
    if every element, up to the last, was computed."""
    n = large_numel_size()
    x = torch.zeros(n, dtype=torch.uint8, device=device)
    zeros_nonzero = torch.count_nonzero(x)
    step = max(1, n // 1021)
    x[::step].fill_(1)
    x[-ROW:].fill_(3)
    x.add_(1)
    x.mul_(5)  # 5 everywhere, 10 on the strided elements, 20 on the last row
    spots = torch.tensor([0, 1, step, n // 2, n - ROW - 1, n - ROW, n - 1])
    return {
        "numel": x.numel(),
        "zeros_nonzero": zeros_nonzero,
        "nonzero": torch.count_nonzero(x),
        "amax": x.amax(),
        "amin": x.amin(),
        "argmax": x.argmax(),
        "sum_mod_256": x.sum(dtype=torch.uint8),  # uint8 in, uint8 out: no copy
        "strided_sum": x[::step].sum(),
        "row_amax": x.view(-1, ROW).amax(1),
        "spots": x.index_select(0, spots.to(device)),
    }


CASES = (many_small_allocations, long_op_chain, large_numel)
