"""Meta device manifest: metadata-only conformance (shape, dtype, strides, errors).

Meta tensors carry no values, so every case is judged with metadata only. Ops whose
output shape depends on values (nonzero, masked_select, unique) cannot run on meta and
report as unsupported. This file is read, never executed.
"""

DEVICE = "meta"
BACKEND_NAME = "PyTorch meta tensors"

DTYPES = {
    "float32": True,
    "float16": True,
    "bfloat16": True,
    "int64": True,
    "bool": True,
}

# values-free variants only: backward needs values for a scalar loss, but its shapes
# are still checked; RNG and serialization need real storage and are left out. Not
# "nonfinite": NaN and Inf are values, so on meta its cases would only repeat the
# forward ones' shapes, and where CPU raises on a NaN (an out-of-range check such
# as histc's or multinomial's) meta, which never looks at values, cannot raise.
CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "views", "mutation", "out_semantics", "memory_formats", "factories",
    "device_mismatch",
    # Not "autograd", "training", "workloads", "compile" (nor their feature paths):
    # they compare values (gradients, updated weights, compiled results), and the
    # meta device has none. Nor "stress": it is judged by values too (a 300-op chain,
    # counts and spot values of a large tensor, torch.equal of permuted round trips).
    # Not "dtypes" (nor "bits_dtypes", "quantized") either: its casts and ops are
    # judged bit for bit.
    # Not "memory" or "device_api" (nor their paths): the meta device allocates
    # nothing and has no device module (torch.get_device_module("meta") raises).
]  # fmt: skip

LEVEL = 1

# data-dependent output shapes have no meta implementation by design
UNSUPPORTED_PATTERNS = [
    "not implemented",
    "not supported",
    "NotImplementedError",
    "Could not run '.*' with arguments from the '.*' backend",
    "unsupported",
    "cannot be called on meta tensors",
    "data-dependent",
]

RESOURCE_LIMITS = {"case_timeout_s": 60, "workers": 2}
