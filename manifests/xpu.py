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
    "nonfinite",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "serialization", "device_mismatch",
    # the engine, training, model and torch.compile suites, then paths inside them
    # (inductor generates Triton kernels for XPU)
    "autograd", "training", "workloads", "compile",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler", "pin_memory",
    "inductor", "compile_fullgraph",
]  # fmt: skip

LEVEL = 4

TOLERANCES = {"dtypes": {"float32": {"atol": 1e-4, "rtol": 1e-4}}}

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 2}
DEVICE_COUNT = 1
