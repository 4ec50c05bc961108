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
    # OpInfo has few ops in these (level 4; all 7,626 cases pass CPU validation at
    # level 8); the dtypes suite judges their casts and ops
    "uint16": True,
    "uint32": True,
    "uint64": True,
    "float8_e4m3fn": True,
    "float8_e5m2": True,
    # Complex is validated through the dtypes suite only (a regex claims its cases by
    # name): the OpInfo matrix in complex would add ~1,900 CPU-validation cases at
    # level 3 and ~18,000 at level 4 that no run has validated yet. Set them to True
    # once a level-8 run passes.
    "complex64": r"complex_\w+|dtype_views",
    "complex128": r"complex_\w+|dtype_views",
}

# OpInfo variants and hand-written suites this backend claims to support, then the
# feature paths inside the suites. Not "pin_memory": the CPU is the host, there is
# nothing to pin for (that case is not_run: device_count on the CPU anyway).
# "inductor" on the CPU compiles C++: it needs a C++ compiler (gcc or clang) on the
# host; drop it on a machine without one (its cases are level 3).
# "stress" (levels 7-8) sizes its largest tensor from RESOURCE_LIMITS memory_mb (1/16
# of it); this manifest sets none, so the tensor is 64 MiB.
CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "nonfinite",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch", "autograd", "training", "workloads",
    "compile", "stress", "dtypes",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler",
    "inductor", "compile_fullgraph", "bits_dtypes", "quantized",
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
