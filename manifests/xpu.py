"""Intel XPU manifest: Intel GPUs through the XPU backend.

This file is read, never executed.
"""

DEVICE = "xpu"
BACKEND_NAME = "PyTorch XPU"

DTYPES = {
    "float32": True,
    "float64": True,
    "float16": True,
    "bfloat16": True,
    "int64": True,
    "int32": True,
    "uint8": True,
    "bool": True,
}

CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch",
    # the engine, training and model suites, then paths inside them
    "autograd", "training", "workloads",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler", "pin_memory",
]  # fmt: skip

LEVEL = 4

TOLERANCES = {"dtypes": {"float32": {"atol": 1e-4, "rtol": 1e-4}}}

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 2}
DEVICE_COUNT = 1
