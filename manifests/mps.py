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
    # edge shapes and scale (levels 7-8): no memory_mb below, so its large tensor is
    # 64 MiB; set one to size it to 1/16 of that (unified memory holds both runs)
    "stress",
    # casts and ops in complex, unsigned and float8 (suite "dtypes"): its cases run in
    # the dtypes DTYPES declares; add uint16/32/64 or the float8 dtypes there to run
    # theirs (MPS has no complex128: no float64). Not "bits_dtypes" or "quantized"
    # yet: claim them once a run on the device passes the bits8/bits16 and
    # quantized-tensor cases.
    "dtypes",
    # the memory and device-module suites. torch.mps has no current_device or
    # set_device, so device_api's current_device case is unsupported there (a real
    # gap for device-agnostic code). Not "memory_stats": torch.mps names its
    # statistics current_allocated_memory and driver_allocated_memory and keeps no
    # peak. Not "streams" (torch.mps has no Stream) nor "device_properties". Not
    # "oom": torch.mps reports no total_memory, so the case would size its one
    # allocation from RESOURCE_LIMITS memory_mb (unset here), and whether Metal
    # allocations honour that address-space cap is unchecked; claim both once seen.
    "memory", "device_api", "events", "device_generator",
]  # fmt: skip

LEVEL = 4

# Metal's fast math for transcendental functions
TOLERANCES = {"dtypes": {"float32": {"atol": 1e-4, "rtol": 1e-4}}}

# With PYTORCH_ENABLE_MPS_FALLBACK=1, ops Metal lacks run on the CPU; such cases are
# labelled and counted apart from native passes. "forbid" fails them instead.
CPU_FALLBACK = "allow"

RESOURCE_LIMITS = {"case_timeout_s": 120, "workers": 1}
DEVICE_COUNT = 1
