"""simdev manifest: TorchCTS judging its own pure-Python reference backend.

simdev (package torchcts-simdev) is a PrivateUse1 device written in Python: every aten
op runs on CPU payloads, and a fault profile injects the bugs real backends have (wrong
values, dtypes, shapes and strides, missing kernels, device errors, segfaults, aborts,
hangs, broken aliasing, dropped in-place writes). `make run` uses this manifest on a
machine without an accelerator, so every status appears without special hardware.

Run it clean (no faults; the results must then match a CPU run case for case) with
    TORCHCTS_SIMDEV_PROFILE=clean make run
The environment variable (a shipped profile name or a JSON file path) wins over
BACKEND_OPTIONS below. This file is read, never executed: only `NAME = literal`
assignments are allowed.
"""

DEVICE = "simdev"
BACKEND_NAME = "simdev (pure-Python PrivateUse1 reference backend)"

# Imported in every process that runs cases; it registers the "simdev" device. The
# runner then calls torchcts_simdev.torchcts_configure(BACKEND_OPTIONS).
BACKEND_IMPORT = "torchcts_simdev"

# "demo" ships with the package: a realistic mix of faults, each confined to one op
# (and usually one dtype), so that a default run produces every status. "clean"
# injects nothing. A path to your own JSON profile works too (schema in the README
# of packages/torchcts-simdev).
BACKEND_OPTIONS = {"fault_profile": "demo"}

# simdev computes with the CPU's kernels, so it supports whatever the CPU supports.
# float16 is narrowed to a regex of op names to show how a backend declares partial
# dtype support: cases of other ops in float16 are reported not_run, with the reason.
DTYPES = {
    "float32": True,
    "float64": True,
    "float16": r"^(add|sub|mul|div|neg|abs|exp|sin|cos|sum|mean|clamp|where|cat)$",
    "bfloat16": True,
    "int64": True,
    "int32": True,
    "bool": True,
    "complex64": True,
    # the dtypes suite's casts and ops; OpInfo has few ops in these (level 4)
    "complex128": True,
    "uint16": True,
    "uint32": True,
    "uint64": True,
    "float8_e4m3fn": True,
    "float8_e5m2": True,
}

# OpInfo variants and hand-written suites simdev supports, then the feature paths
# inside the suites (autocast: simdev registers the CPU's autocast policy itself;
# foreach and fused optimizers run the CPU's kernels on simdev payloads). Left out,
# each with its reason; a capability left out makes its cases not_run
# (capability_not_declared) instead of crashed or failed:
# - "serialization": torch.load onto a device allocates storage with the device's
#   allocator, and a Python backend cannot register one (simdev would segfault there
#   even with no faults).
# - "pin_memory": pinning for a PrivateUse1 device needs a pinned-memory allocator
#   registered from C++ (PrivateUse1HooksInterface); DataLoader(pin_memory=True)
#   raises NotImplementedError on simdev.
# - "inductor": inductor has no code generator for simdev (no device op overrides or
#   scheduling registered for it: InductorError KeyError 'simdev'), and code it
#   generated would bypass simdev's kernels and with them the fault injection.
#   torch.compile with backend="aot_eager" ("compile") runs simdev's own kernels.
# - "quantized": a quantized tensor's implementation (its quantizer: scale, zero
#   point, scheme) is made in C++ by a backend's quantized dispatch key; a Python
#   backend cannot make one, so quantize_per_tensor on simdev returns a plain tensor
#   labelled quint8 whose q_scale() fails an internal assert, and moving a CPU
#   quantized tensor to simdev raises NotImplementedError (empty_quantized).
#   "bits_dtypes" (bits8/bits16 bytes that only move) works.
CAPABILITIES = [
    "forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous",
    "nonfinite",
    "views", "mutation", "out_semantics", "memory_formats", "copies", "factories",
    "rng", "device_mismatch", "autograd", "training", "workloads", "compile",
    "dtypes",
    "foreach_optimizers", "fused_optimizers", "autocast", "grad_scaler",
    # edge shapes and scale (levels 7-8); its large tensor is 1/16 of memory_mb below
    # (256 MiB of CPU payload, about 2 s of simdev's Python dispatch per run)
    "stress",
    "compile_fullgraph", "bits_dtypes",
    # the memory and device-module suites: simdev's torch.simdev counts the payloads
    # its storages hold (memory_stats) and reports a failed payload allocation as
    # torch.OutOfMemoryError ("oom", sized by RESOURCE_LIMITS memory_mb below: its
    # memory is the host's). Not claimed, because a Python backend cannot provide
    # them: "device_generator" (torch.Generator(device="simdev") needs the C++
    # PrivateUse1HooksInterface's getNewGenerator; the Python hooks have none),
    # "streams" and "events" (torch.Stream needs stream functions in a C++ device
    # guard; simdev runs every op synchronously, so stubs would pass with nothing
    # to order), "device_properties" (simdev has no memory of its own to report).
    "memory", "device_api", "memory_stats", "oom",
]  # fmt: skip

# 1 = fast primitive baseline ... 4 = broad production ... 8 = release depth
LEVEL = 1

# at most this many samples per op, variant and dtype (None: all of them)
MAX_SAMPLES_PER_OP = None

# A hang is a case that outlives case_timeout_s; keep it short so the demo's injected
# hang costs seconds, not minutes. memory_mb caps each isolated case's memory.
RESOURCE_LIMITS = {"case_timeout_s": 20, "workers": 2, "memory_mb": 4096}

# A case that ran part of its work through the backend's CPU fallback (overloads
# with no kernel of the backend's own; a profile's cpu_fallback rules make simdev
# route some there) is labelled and counted apart from native passes. "forbid"
# fails such a case that passed (implement_or_declare), naming the overloads.
CPU_FALLBACK = "allow"

# Ops excluded on purpose, with the reason the report shows for them (not_run).
OPS = {
    "exclude": {
        "to_sparse": "simdev stores dense payloads only; sparse layouts are out of scope",
        "sparse.mm.reduce": "its input is a sparse CSR tensor: simdev stores dense "
        "payloads only (a Python-backend limitation, simdev README)",
        "sparse.sampled_addmm": "its input is a sparse CSR tensor: simdev stores dense "
        "payloads only (a Python-backend limitation, simdev README)",
        "_lazy_clone": "copy-on-write needs a storage that owns its data; a simdev "
        "storage points into a CPU payload (a Python-backend limitation, simdev README)",
    }
}
