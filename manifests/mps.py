"""Apple MPS manifest: Metal Performance Shaders on Apple silicon.

MPS has no float64 and limited complex support; those dtypes are declared False so
their cases are reported as not_run (dtype_not_supported) instead of as failures.
Known MPS crashes are isolated by the known-crash ledger, never skipped.
This file is read, never executed.
"""

DEVICE = "mps"
BACKEND_NAME = "PyTorch MPS"

DTYPES = {
    "float32": True,
    "float16": True,
    "bfloat16": True,
    "float64": False,
    "complex64": False,
    "int64": True,
    "int32": True,
    "int16": True,
    "int8": True,
    "uint8": True,
    "bool": True,
}

CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "nonfinite",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch",
    # the engine, training, model and torch.compile suites, then paths inside them.
    # MPS has no float64, so autograd's gradcheck runs its float32 case
    # (DTYPES["float64"] is False).
    # Not "pin_memory": Apple silicon has unified memory, pinning for MPS is not a path.
    # Not "inductor": inductor's MPS code generator (Metal shaders) is a prototype in
    # PyTorch; claim it once your torch passes the inductor cases.
    "autograd", "training", "workloads", "compile",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler",
    "compile_fullgraph",
]  # fmt: skip

LEVEL = 4

# Metal's fast math for transcendental functions
TOLERANCES = {"dtypes": {"float32": {"atol": 1e-4, "rtol": 1e-4}}}

# With PYTORCH_ENABLE_MPS_FALLBACK=1, ops Metal lacks run on the CPU; such cases are
# labelled and counted apart from native passes. "forbid" fails them instead.
CPU_FALLBACK = "allow"

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 1}
DEVICE_COUNT = 1
