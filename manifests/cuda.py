"""CUDA (and ROCm) manifest: broad production behaviour on an NVIDIA or AMD GPU.

TF32 and reduced-precision accumulation differ from CPU within tolerance; the
tolerance table below is where a team records what it accepts, per dtype and per op.
This file is read, never executed.
"""

DEVICE = "cuda"
BACKEND_NAME = "PyTorch CUDA"

DTYPES = {
    "float32": True,
    "float64": True,
    "float16": True,
    "bfloat16": True,
    "complex64": True,
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
    # the engine, training, model and torch.compile suites, then paths inside them:
    # CUDA has every one (inductor generates Triton kernels for it)
    "autograd", "training", "workloads", "compile",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler", "pin_memory",
    "inductor", "compile_fullgraph",
    # edge shapes and scale (levels 7-8); its large tensor is 1/16 of memory_mb below
    # (1000 MiB of uint8, and the same again on the host for the CPU run)
    "stress",
    # casts and ops in complex, unsigned and float8 (suite "dtypes"): its cases run in
    # the dtypes DTYPES declares; add complex128, uint16/32/64 and float8_e4m3fn/e5m2
    # there to run theirs. Not "bits_dtypes" or "quantized" yet: claim them once a run
    # on the device passes the bits8/bits16 and quantized-tensor cases.
    "dtypes",
    # the memory and device-module suites, and every path inside them (oom sizes
    # its one allocation from get_device_properties().total_memory)
    "memory", "device_api", "memory_stats", "oom", "device_properties", "streams",
    "events", "device_generator",
]  # fmt: skip

LEVEL = 4

# matmul-like ops may use TF32 / split-K reductions on GPUs
TOLERANCES = {
    "dtypes": {"float16": {"atol": 1e-3, "rtol": 1e-3}},
    "ops": {
        "matmul": {"float32": {"atol": 1e-4, "rtol": 1e-4}},
        "mm": {"float32": {"atol": 1e-4, "rtol": 1e-4}},
        "bmm": {"float32": {"atol": 1e-4, "rtol": 1e-4}},
    },
}

RESOURCE_LIMITS = {"case_timeout_s": 120, "memory_mb": 16000, "workers": 2}
DEVICE_COUNT = 1
