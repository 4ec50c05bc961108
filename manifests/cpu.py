"""CPU validation manifest: the suite judged against the CPU itself.

Every case compares a CPU run with the CPU reference, so anything other than "passed"
here is a harness bug in TorchCTS, not a backend result. `make run-cpu` uses it.
This file is read, never executed: only `NAME = literal` assignments are allowed.
"""

DEVICE = "cpu"
BACKEND_NAME = "PyTorch CPU (validation)"

# dtype -> True (all ops), False (none), or a regex of op names supported in that dtype
DTYPES = {
    "float32": True,
    "float64": True,
    "float16": True,
    "bfloat16": True,
    "int64": True,
    "int32": True,
    "bool": True,
}

# OpInfo variants and hand-written suites this backend claims to support, then the
# feature paths inside the suites. Not "pin_memory": the CPU is the host, there is
# nothing to pin for (that case is not_run: device_count on the CPU anyway).
# "inductor" on the CPU compiles C++: it needs a C++ compiler (gcc or clang) on the
# host; drop it on a machine without one (its cases are level 3).
CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch", "autograd", "training", "workloads",
    "compile",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler",
    "inductor", "compile_fullgraph",
    # the memory and device-module suites: torch.cpu offers is_available,
    # device_count and synchronize, and torch.Generator(device="cpu"), so those are
    # claimed. Not claimed, because torch.cpu lacks them: "memory_stats" (no
    # memory_allocated, max_memory_allocated, reset_peak_memory_stats or
    # empty_cache), "device_properties" (no get_device_properties/get_device_name),
    # "streams" and "events" (torch.cpu.Stream and Event are stubs for device-agnostic
    # code: no Stream.synchronize or query, no timing Event or elapsed_time). Not
    # "oom": the CPU allocator reports a failed allocation as a plain RuntimeError
    # ("DefaultCPUAllocator: can't allocate memory"), not torch.OutOfMemoryError.
    # current_device is not_run on the CPU (device_count): it has no device index.
    "memory", "device_api", "device_generator",
]  # fmt: skip

# 1 = fast primitive baseline ... 4 = broad production ... 8 = release depth
LEVEL = 1

# at most this many samples per op, variant and dtype (None: all of them)
MAX_SAMPLES_PER_OP = None

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 2}
