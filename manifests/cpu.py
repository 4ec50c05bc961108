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
    "nonfinite",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch", "autograd", "training", "workloads",
    "compile",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler",
    "inductor", "compile_fullgraph",
]  # fmt: skip

# 1 = fast primitive baseline ... 4 = broad production ... 8 = release depth
LEVEL = 1

# at most this many samples per op, variant and dtype (None: all of them)
MAX_SAMPLES_PER_OP = None

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 2}
