"""What each fault kind does: crash the process, raise, or corrupt an op's outputs.

Crash kinds are real: a segfault is a SIGSEGV from native code, an abort is SIGABRT, and
a hang blocks in native code *holding the GIL*, so neither Python signal handlers nor a
Python heartbeat thread can run; only killing the process ends it. That is what a
broken driver does, and it is what the harness's isolation must survive.
"""

from __future__ import annotations

import ctypes
import os

import torch

from torchcts_simdev.profile import FaultRule

# Faults that act before the op runs (they never produce outputs).
BEFORE = frozenset(
    (
        "not_implemented",
        "runtime_error",
        "poison",
        "segfault",
        "abort",
        "hang",
        "memory_blowup",
    )
)
# Faults that replace the op's outputs after it ran.
AFTER = frozenset(
    (
        "wrong_values",
        "wrong_dtype",
        "wrong_shape",
        "wrong_strides",
        "contiguous_copy",
        "break_alias",
        "flush_nonfinite",
    )
)

_FLOAT8 = frozenset(
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, name)
)
_UNSIGNED_WIDE = frozenset((torch.uint16, torch.uint32, torch.uint64))
_WRONG_DTYPE = {
    torch.float32: torch.float64,
    torch.float64: torch.float32,
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
    torch.complex64: torch.complex128,
    torch.complex128: torch.complex64,
    torch.bool: torch.uint8,
    torch.int64: torch.int32,
}
# Default assert_close tolerances (atol, rtol); "small" errors are 10x these.
_TOLERANCE = {
    torch.float16: (1e-5, 1e-3),
    torch.bfloat16: (1e-5, 1.6e-2),
    torch.float32: (1e-5, 1.3e-6),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1e-5, 1.3e-6),
    torch.complex128: (1e-7, 1e-7),
}


def describe(rule: FaultRule, op_name: str, profile: str) -> str:
    """The tag every injected failure carries, so a reader can trace it to its rule."""
    return (
        f"injected by simdev fault profile {profile!r} rule {rule.index} on {op_name}"
    )


def before(rule: FaultRule, op_name: str, profile: str) -> None:
    """Run a fault that acts instead of the op: raise, crash, hang or exhaust memory."""
    tag = describe(rule, op_name, profile)
    kind = rule.fault
    if kind == "not_implemented":
        raise NotImplementedError(
            f"Could not run '{op_name}' with arguments from the 'simdev' backend "
            f"({tag})"
        )
    if kind == "runtime_error":
        raise RuntimeError(f"simdev kernel failed: device fault 0x2a ({tag})")
    if kind == "poison":
        raise RuntimeError(
            f"simdev kernel failed: device fault 0x2b, the device is now in an error "
            f"state ({tag})"
        )
    if kind == "memory_blowup":
        _memory_blowup(rule.max_mb, tag)
    _announce(f"simdev: {kind} {tag}")
    if kind == "segfault":
        ctypes.string_at(0)
    elif kind == "abort":
        os.abort()
    elif kind == "hang":
        hang_holding_gil()


def poison_origin(rule: FaultRule, op_name: str, profile: str) -> str:
    """The op and rule a ``poison`` fault names in every later op's error."""
    return f"{op_name}, simdev fault profile {profile!r} rule {rule.index}"


def poisoned_error(poisoned_by: str, op_name: str) -> RuntimeError:
    """What every op raises once a ``poison`` fault left the device in an error state.

    Worded like a sticky driver error (CUDA's illegal address): it names the op that
    failed now and the one that broke the device, so a reader can tell the two apart.
    """
    return RuntimeError(
        f"simdev device is in an error state (poisoned by {poisoned_by}): {op_name} "
        "cannot run; every simdev op fails until the process restarts"
    )


def _announce(line: str) -> None:
    # os.write, not print: nothing buffered may be lost when the process dies next.
    os.write(2, (line + "\n").encode())


def hang_holding_gil() -> None:
    """Block forever inside native code without releasing the GIL.

    ``ctypes.PyDLL`` calls keep the GIL; relocking a non-recursive pthread mutex that
    this thread already holds deadlocks in the kernel, and signals do not end the wait.
    """
    # dlopen(NULL): the process's own symbols, libc's pthread functions among them.
    libc = ctypes.PyDLL(None)
    mutex = ctypes.create_string_buffer(128)
    libc.pthread_mutex_init(mutex, None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)
    # Only reached where relocking reports EDEADLK instead of blocking: fall back to
    # sleeping in native code, still holding the GIL between calls.
    while True:  # pragma: no cover - glibc never gets here
        libc.sleep(3600)


# the CPU allocator's words when an allocation fails (address-space cap, no memory)
_HOST_ALLOCATION_FAILED = "DefaultCPUAllocator: can't allocate memory"


def out_of_memory(exc: RuntimeError, op_name: str) -> torch.OutOfMemoryError | None:
    """The device's out-of-memory error for a payload allocation that failed, as a
    device allocator reports one (None when `exc` is another error).

    simdev's memory is host memory, allocated by the CPU allocator, which says so in
    a plain RuntimeError; PyTorch's contract for a device is torch.OutOfMemoryError.
    """
    if isinstance(exc, torch.OutOfMemoryError) or _HOST_ALLOCATION_FAILED not in str(
        exc
    ):
        return None
    first = str(exc).strip().splitlines()[0]
    return torch.OutOfMemoryError(f"simdev: out of memory in {op_name}: {first}")


def _memory_blowup(max_mb: int, tag: str) -> None:
    chunks: list[torch.Tensor] = []
    chunk_mb = 64
    try:
        while len(chunks) * chunk_mb < max_mb:
            # ones, not empty: pages must be touched to count against a memory limit.
            chunks.append(torch.ones(chunk_mb * 2**20, dtype=torch.uint8))
    except (MemoryError, RuntimeError):
        pass
    total = len(chunks) * chunk_mb
    chunks.clear()
    raise torch.OutOfMemoryError(
        f"simdev: out of memory after allocating {total} MiB ({tag})"
    )


def transform(
    rule: FaultRule, tensor: torch.Tensor, aliases_input: bool, written: bool
) -> torch.Tensor:
    """One faulty output in place of ``tensor`` (the same object when left alone).

    ``aliases_input`` says the output shares storage with an input (a view or an
    in-place result); ``written`` says it is the very argument the op mutated.
    """
    kind = rule.fault
    if kind == "break_alias":
        return tensor.clone() if aliases_input else tensor
    if kind == "wrong_values":
        return _perturb(tensor, rule.magnitude, aliases_input and not written)
    if kind == "flush_nonfinite":
        return _flush(tensor, aliases_input and not written)
    if kind == "wrong_dtype":
        return tensor.to(_WRONG_DTYPE.get(tensor.dtype, torch.float64))
    if kind == "wrong_shape":
        return tensor.unsqueeze(0).clone()
    if kind == "contiguous_copy":
        # a view computed by copying, or a memory format ignored: the values and
        # shape are right, the layout is row-major at offset 0 in new storage
        return tensor.clone(memory_format=torch.contiguous_format)
    return _restride(tensor)


def _perturb(tensor: torch.Tensor, magnitude: str, view: bool) -> torch.Tensor:
    """Values off by 10x the default tolerance ("small") or by 1 + |x| ("large").

    An in-place op's output is its input, so writing the error into it is the fault;
    a pure view's output would write into its base, so it gets a perturbed copy.
    """
    if tensor.numel() == 0:
        return tensor
    target = tensor.clone() if view else tensor
    if tensor.dtype == torch.bool:
        return target.logical_not_()
    if tensor.dtype in _FLOAT8:
        return _perturb_float8(target, magnitude)
    if tensor.dtype in _UNSIGNED_WIDE:
        # the CPU has no add kernel for uint16/32/64: add in int64 (wrapping back)
        wide = target.to(torch.int64)
        return target.copy_(wide + (1 if magnitude == "small" else 100))
    if tensor.is_floating_point() or tensor.is_complex():
        atol, rtol = _TOLERANCE.get(tensor.dtype, (1e-5, 1.3e-6))
        if magnitude == "large":
            return target.add_(target.abs() + 1)
        return target.add_(10 * (atol + rtol * target.abs()))
    return target.add_(1 if magnitude == "small" else 100)


def _perturb_float8(target: torch.Tensor, magnitude: str) -> torch.Tensor:
    """float8 has no add kernel on the CPU, and 10x any tolerance is several float8
    steps: "small" moves every finite code one step away from zero (the error of a
    wrong rounding mode; toward zero where that step would leave the finite values,
    NaN and inf stay), "large" adds 1 + |x| in float32 and rounds back."""
    if magnitude == "large":
        wide = target.float()
        return target.copy_(wide + wide.abs() + 1)
    codes = target.view(torch.uint8)
    wide = codes.to(torch.int16)
    away = (wide + 1).remainder(256)
    step = torch.where(_decoded(away, target.dtype).isfinite(), away, wide - 1)
    finite = target.float().isfinite()
    codes.copy_(torch.where(finite, step, wide))
    return target


def _decoded(codes: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float8 codes (held in a wider integer tensor) as float32 values."""
    return codes.to(torch.uint8).view(dtype).float()


def _flush(tensor: torch.Tensor, view: bool) -> torch.Tensor:
    """NaN as 0 and +-Inf as the largest finite values: finite outputs stay right.

    A kernel compiled with fast-math, or one that clamps, does this; only inputs that
    hold NaN or Inf (TorchCTS's nonfinite variant) can tell it from a correct one.
    """
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return tensor
    if bool(tensor.isfinite().all()):
        return tensor
    target = tensor.clone() if view else tensor
    return target.nan_to_num_(nan=0.0)


def _restride(tensor: torch.Tensor) -> torch.Tensor:
    """Same values and shape, different strides (column-major, or padded when 1-D)."""
    shape = tuple(tensor.shape)
    if len(shape) >= 2:
        strides = [1] * len(shape)
        for dim in range(1, len(shape)):
            strides[dim] = strides[dim - 1] * max(shape[dim - 1], 1)
        if tuple(strides) != tensor.stride():
            out = torch.empty_strided(shape, strides, dtype=tensor.dtype)
            return out.copy_(tensor)
    if len(shape) == 0:
        return torch.empty(2, dtype=tensor.dtype)[1:].view(()).copy_(tensor)
    padded = torch.empty((*shape[:-1], 2 * shape[-1]), dtype=tensor.dtype)
    return padded[..., ::2].copy_(tensor)
