"""Device memory: the allocator's statistics, running out of memory, and large
tensors within the manifest's memory limit.

Statistics (memory_allocated, max_memory_allocated, reset_peak_memory_stats,
empty_cache) are looked up on ``torch.get_device_module(device)``: a manifest claiming
``memory_stats`` claims they exist, so a missing one is unsupported, naming it, never
a pass. Their values are properties written by hand (allocators round sizes up, so an
N-byte allocation raises memory_allocated by at least N; freeing it brings it back;
the peak keeps what was freed until a reset), each True or the sentence saying how it
broke, with the numbers seen.

Running out of memory must not take the host down. The ``oom`` case makes one
allocation, never touched, 1 GiB larger than the device's memory: its total_memory
(``get_device_properties``) where the module reports one, else the manifest's
``RESOURCE_LIMITS`` ``memory_mb``, which the runner enforces on the device run as an
address-space cap (a device whose memory is the host's fails at the cap; no page is
ever given up). With neither it refuses to guess and never fills memory to find out.

Large tensors are sized under ``memory_mb`` (none set: 128 MiB), their values judged
against the same check on CPU. ``numel_beyond_int32`` (level 7) indexes past 2**31
elements, where kernels with 32-bit indexing break; it needs about 2.2 GiB.
"""

from __future__ import annotations

from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import all_hold, case, device_function, holds
from torchcts_cases.suites.limits import run_limits

SUITE = "memory"
MIB = 1 << 20
ALLOCATION = 4 * MIB  # what the statistics cases allocate and free
OOM_MARGIN = 1 << 30  # an out-of-memory request exceeds the device's memory by this
LARGE_NUMEL = (1 << 25) + 3  # 128 MiB of int32 and an odd tail
BEYOND_INT32 = (1 << 31) + 8  # uint8 elements: indices past 2**31 - 1


def _stats(device: str, *names: str) -> list[Any]:
    return [device_function(device, name, "memory_stats") for name in names]


@case(
    SUITE,
    "memory_allocated_tracks",
    1,
    capability="memory_stats",
    expected=all_hold("counts_allocation", "counts_free"),
)
def memory_allocated_tracks(device: str, dtype: str | None) -> dict[str, Any]:
    """memory_allocated grows by at least a 4 MiB allocation and falls back once the
    tensor is freed."""
    (allocated,) = _stats(device, "memory_allocated")
    before = allocated(device)
    x = torch.empty(ALLOCATION, dtype=torch.uint8, device=device)
    grown = allocated(device) - before
    del x
    left = allocated(device) - before
    return {
        "counts_allocation": holds(
            grown >= ALLOCATION,
            f"memory_allocated grew by {grown} after a {ALLOCATION}-byte allocation; "
            f"expected >= {ALLOCATION}",
        ),
        "counts_free": holds(
            left <= 0,
            f"memory_allocated still {left} above its start after the "
            f"{ALLOCATION}-byte tensor was freed; expected <= 0",
        ),
    }


@case(
    SUITE,
    "peak_and_reset",
    2,
    capability="memory_stats",
    expected=all_hold("reset_sets_peak", "peak_keeps_freed", "reset_forgets_peak"),
)
def peak_and_reset(device: str, dtype: str | None) -> dict[str, Any]:
    """After reset_peak_memory_stats the peak is what is allocated; it keeps an 8 MiB
    allocation after the free, until the next reset."""
    allocated, peak, reset = _stats(
        device, "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"
    )
    size = 2 * ALLOCATION
    reset(device)
    base, first = allocated(device), peak(device)
    x = torch.empty(size, dtype=torch.uint8, device=device)
    del x
    high = peak(device)
    reset(device)
    now, again = allocated(device), peak(device)
    return {
        "reset_sets_peak": holds(
            first == base,
            f"max_memory_allocated {first} right after reset_peak_memory_stats, "
            f"memory_allocated {base}; expected equal",
        ),
        "peak_keeps_freed": holds(
            high >= base + size,
            f"max_memory_allocated {high} after a {size}-byte allocation (freed) "
            f"from {base}; expected >= {base + size}",
        ),
        "reset_forgets_peak": holds(
            again == now,
            f"max_memory_allocated {again} after a second reset, memory_allocated "
            f"{now}; expected equal",
        ),
    }


@case(
    SUITE,
    "empty_cache_keeps_live",
    3,
    capability="memory_stats",
    expected=all_hold("allocated_unchanged", "values_kept", "allocates_after"),
)
def empty_cache_keeps_live(device: str, dtype: str | None) -> dict[str, Any]:
    """empty_cache releases only cached, unused memory: live tensors, their values and
    memory_allocated are untouched, and allocation works afterwards."""
    allocated, empty_cache = _stats(device, "memory_allocated", "empty_cache")
    keep = torch.arange(1024, dtype=torch.int32, device=device)
    drop = torch.empty(ALLOCATION, dtype=torch.uint8, device=device)
    del drop
    before = allocated(device)
    empty_cache()
    after = allocated(device)
    again = torch.full((1024,), 7, dtype=torch.int32, device=device)
    kept = keep.to("cpu")
    return {
        "allocated_unchanged": holds(
            after == before,
            f"memory_allocated {after} after empty_cache, {before} before; expected "
            "equal (live tensors are not cache)",
        ),
        "values_kept": holds(
            torch.equal(kept, torch.arange(1024, dtype=torch.int32)),
            f"a live tensor changed across empty_cache: {kept[:8].tolist()} ...",
        ),
        "allocates_after": holds(
            bool((again.to("cpu") == 7).all()),
            "a tensor filled with 7 after empty_cache does not hold 7",
        ),
    }


def _oom_request(device: str) -> tuple[int, str]:
    """Bytes certain to exceed the device's memory, and where that size comes from."""
    properties = getattr(torch.get_device_module(device), "get_device_properties", None)
    total = getattr(properties(device), "total_memory", None) if properties else None
    if isinstance(total, int) and total > 0:
        return total + OOM_MARGIN, f"total_memory {total} + 1 GiB"
    cap = run_limits().memory_mb
    if cap:
        return cap * MIB + OOM_MARGIN, f"memory_mb {cap} MiB + 1 GiB"
    raise RuntimeError(
        f"oom: torch.{device} reports no total_memory and the manifest sets no "
        "RESOURCE_LIMITS memory_mb, so no size is known to exceed the device's memory "
        "(this case never fills memory to find out): set memory_mb or leave oom out"
    )


@case(
    SUITE,
    "out_of_memory",
    3,
    capability="oom",
    expected=all_hold("raises_out_of_memory", "usable_after"),
)
def out_of_memory(device: str, dtype: str | None) -> dict[str, Any]:
    """One untouched allocation 1 GiB beyond the device's memory raises
    torch.OutOfMemoryError, and the device computes correctly afterwards."""
    size, why = _oom_request(device)
    asked = f"torch.empty({size} bytes: {why})"
    try:
        hog = torch.empty(size, dtype=torch.uint8, device=device)
    except torch.OutOfMemoryError:
        raised: bool | str = True
    except NotImplementedError:
        raise
    except (RuntimeError, MemoryError) as exc:
        first = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raised = (
            f"{asked} raised {type(exc).__name__}, not torch.OutOfMemoryError: {first}"
        )
    else:
        del hog
        raised = f"{asked} succeeded; expected torch.OutOfMemoryError"
    try:
        after = (torch.arange(8, device=device) * 3).to("cpu").tolist()
        usable = holds(
            after == [3 * i for i in range(8)],
            f"after the allocation failed, arange(8) * 3 gave {after}",
        )
    except NotImplementedError:
        raise
    except RuntimeError as exc:
        usable = f"after the allocation failed, the device raised {exc}"
    return {"raises_out_of_memory": raised, "usable_after": usable}


def _large_numel() -> int:
    """LARGE_NUMEL, or what keeps the case's four int32 tensors under memory_mb."""
    cap = run_limits().memory_mb
    return LARGE_NUMEL if not cap else min(LARGE_NUMEL, cap * MIB // 16)


@case(SUITE, "large_tensor", 3, source=ExpectedSource.CPU_REFERENCE)
def large_tensor(device: str, dtype: str | None) -> dict[str, Any]:
    """A 128 MiB int32 tensor (less under a small memory_mb): arithmetic in place,
    exact reductions, samples across its whole length, a host round trip."""
    n = _large_numel()
    x = torch.arange(n, dtype=torch.int32, device=device)
    # a 0-dim tensor, not the number: under the runner's fallback watch a Python
    # scalar's generic remainder kernel fails on watched devices (dispatch_recorder)
    x.mul_(3).add_(1).remainder_(torch.tensor(65521, dtype=torch.int32, device=device))
    host = x.to("cpu")
    back = host.to(device)
    same = bool(torch.equal(back, x))
    del host, back
    step = n // 4099
    halves = x.to(torch.float32).mul_(0.5)
    return {
        "numel": x.numel(),
        "sum": x.sum(dtype=torch.int64),
        "max": x.max(),
        "head": x[:16],
        "tail": x[-16:],
        "sampled": x[::step],
        "halves_sampled": halves[::step],
        "round_trip": holds(same, f"{n} int32 values changed in a host round trip"),
    }


@case(SUITE, "numel_beyond_int32", 7, source=ExpectedSource.CPU_REFERENCE)
def numel_beyond_int32(device: str, dtype: str | None) -> dict[str, Any]:
    """A uint8 tensor of 2**31 + 8 elements: writes, a view and reductions past index
    2**31 - 1 (32-bit indexing wraps there)."""
    edge = 1 << 31
    x = torch.zeros(BEYOND_INT32, dtype=torch.uint8, device=device)
    x[edge - 1] = 2
    x[edge] = 3
    x.narrow(0, edge + 1, 4).fill_(1)
    x[-1] = 5
    # counts and the max see elements past the edge only if the kernel covers them
    # all; no sum or argmax: on the CPU those alone take minutes and seconds here
    return {
        "count_nonzero": torch.count_nonzero(x),
        "amax": x.amax(),
        "around_edge": x[edge - 4 : edge + 8].clone(),
        "last": x[-1].item(),
    }


CASES = (
    memory_allocated_tracks,
    peak_and_reset,
    empty_cache_keeps_live,
    out_of_memory,
    large_tensor,
    numel_beyond_int32,
)
