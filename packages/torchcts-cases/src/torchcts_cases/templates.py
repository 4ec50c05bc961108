"""Manifest templates for `torchcts-cases init` and `init-manifest`: one per depth,
each teaching its keys in comments.

`init` writes ``TEMPLATE = True`` so a run can tell an unedited template from a real
manifest. `init-manifest` is given the two facts only the user knows (the device type
and the module that registers the backend), so its manifest runs as written; its
BACKEND_NAME stays the placeholder a submission archive refuses unless one is given.
"""

from __future__ import annotations

import json

from torchcts_schema import CAPABILITY_NAMES

TEMPLATES: dict[str, dict[str, object]] = {
    "smoke": {
        "about": "the fastest useful check: float32 forward on primitive ops",
        "dtypes": {"float32": True},
        "caps": ["forward", "copies", "factories"],
        "level": 1,
        "samples": 1,
    },
    "minimal": {
        "about": "a first real run: core dtypes, forward/method/in-place, basic suites",
        "dtypes": {"float32": True, "int64": True, "bool": True},
        "caps": ["forward", "method", "inplace", "views", "copies", "factories"],
        "level": 1,
        "samples": None,
    },
    "inference": {
        "about": "what an inference backend must get right: reduced precision, out=, "
        "layouts",
        "dtypes": {
            "float32": True,
            "float16": True,
            "bfloat16": True,
            "int64": True,
            "int32": True,
            "bool": True,
        },
        "caps": [
            "forward",
            "method",
            "out",
            "noncontiguous",
            "nonfinite",
            "error_inputs",
            "views",
            "memory_formats",
            "copies",
            "factories",
            "serialization",
            "device_mismatch",
            "compile",
            "memory",
            "device_api",
        ],
        "level": 4,
        "samples": None,
    },
    "training": {
        "about": "inference plus gradients, the autograd engine, optimizers, mixed "
        "precision, model blocks, in-place updates, RNG and mutation",
        "dtypes": {
            "float32": True,
            "float16": True,
            "bfloat16": True,
            "int64": True,
            "int32": True,
            "bool": True,
        },
        "caps": [
            "forward",
            "method",
            "inplace",
            "out",
            "backward",
            "noncontiguous",
            "nonfinite",
            "error_inputs",
            "views",
            "mutation",
            "out_semantics",
            "memory_formats",
            "copies",
            "factories",
            "rng",
            "serialization",
            "device_mismatch",
            "autograd",
            "training",
            "workloads",
            "compile",
            "foreach_optimizers",
            "autocast",
            "grad_scaler",
            "memory",
            "device_api",
        ],
        "level": 4,
        "samples": None,
    },
    "complete": {
        "about": "release depth: every dtype, capability and sample",
        "dtypes": {
            "float32": True,
            "float64": True,
            "float16": True,
            "bfloat16": True,
            "complex64": True,
            "complex128": True,
            "int64": True,
            "int32": True,
            "int16": True,
            "int8": True,
            "uint8": True,
            "uint16": True,
            "uint32": True,
            "uint64": True,
            "float8_e4m3fn": True,
            "float8_e5m2": True,
            "bool": True,
        },
        # every capability the schema knows, so a new one is never left out here
        "caps": list(CAPABILITY_NAMES),
        "level": 8,
        "samples": None,
    },
}


PLACEHOLDER_BACKEND_NAME = "my backend"  # torchcts-evidence refuses to archive it


def _py(value: str | None) -> str:
    """A literal as ruff format writes it, so a manifest written into the repository
    passes `make lint` as it is: double quotes unless the text holds only the other
    kind (JSON's string escapes are Python's too)."""
    if value is None:
        return "None"
    if '"' in value and "'" not in value:
        return repr(value)
    return json.dumps(value)


def render(
    template: str,
    device: str = "cuda",
    backend_import: str | None = None,
    *,
    marked: bool = True,
    backend_name: str | None = None,
    cases_command: str = "torchcts-cases",
) -> str:
    """The text of a manifest from `template` for `device`.

    `marked` ends it with ``TEMPLATE = True`` (a run refuses it until that line goes).
    `cases_command` starts the commands its docstring gives (``bin/torchcts-cases`` at
    a checkout root).
    """
    if template not in TEMPLATES:
        raise KeyError(f"unknown template {template!r} (known: {', '.join(TEMPLATES)})")
    t = TEMPLATES[template]
    dtypes = t["dtypes"]
    assert isinstance(dtypes, dict)
    caps = t["caps"]
    assert isinstance(caps, list)
    dtype_lines = "\n".join(f"    {_py(k)}: {v!r}," for k, v in dtypes.items())
    cap_lines = "\n".join(f"    {_py(c)}," for c in caps)
    imp = _py(backend_import)
    name = _py(backend_name or PLACEHOLDER_BACKEND_NAME)
    if marked:
        marker = (
            "# This is an unedited template. Delete this line once the manifest "
            "describes your backend.\nTEMPLATE = True\n"
        )
    else:
        marker = (
            "# Written by `torchcts-cases init-manifest`; the comments above say what "
            "each key does.\n"
        )
    return f'''"""TorchCTS manifest ({template} template): {t["about"]}.

This file is READ, never executed: only `NAME = literal` assignments are allowed (no
imports, calls or f-strings). Check it with `{cases_command} check-manifest FILE`
and see what will not run, and why, with `{cases_command} show-skips --manifest FILE`.
"""

# The device type string your backend registers: "cuda", "mps", "xpu", or the name of
# your PrivateUse1 backend.
DEVICE = {_py(device)}
BACKEND_NAME = {name}

# A module imported before the run that registers the backend (None for built-ins).
# If it defines torchcts_configure(options), it is called with BACKEND_OPTIONS.
BACKEND_IMPORT = {imp}
BACKEND_OPTIONS = {{}}

# dtype -> True (every op), False (none), or a regex of op names supported in that
# dtype, matched against whole names, e.g. "add|mul|nn\\\\.functional\\\\.relu".
# Cases of dtypes set to False are reported as not_run: dtype_not_supported.
DTYPES = {{
{dtype_lines}
}}

# What the backend claims. OpInfo variants: forward, method, inplace, out, backward,
# error_inputs, noncontiguous, nonfinite (the forward sample with NaN, +Inf and -Inf
# placed into its floating inputs, judged against CPU on the same inputs with NaN
# equal to NaN; a metadata-only device such as meta has no values to place them in,
# so it does not claim it). Hand-written suites: views, mutation, out_semantics,
# memory_formats, copies, factories, rng, serialization, device_mismatch, and
# autograd (gradcheck, hooks, checkpointing: needs backward kernels), training
# (optimizer steps, schedulers, state_dicts against CPU), workloads (attention,
# conv + batch norm, LSTM/GRU, a tiny language model: forward and a training step),
# compile (torch.compile with backend="aot_eager", which any device can run: per-op
# graphs, small models forward and backward, dynamic shapes, a graph break; judged
# against eager CPU, graph breaks and recompiles reported in each record's detail),
# stress (levels 7-8: zero-size and rank 8-20 tensors, overlapping and expanded
# strides, thousands of small allocations, a 300-op chain, and a tensor of 1/16 of
# RESOURCE_LIMITS memory_mb, 64 MiB without one: set memory_mb to size it).
# dtypes (casts, view(dtype), comparisons and arithmetic in complex, unsigned and
# float8 dtypes, bit for bit; each case runs in its dtype, so DTYPES decides which).
# Paths inside those suites, each claimed on its own: foreach_optimizers
# (foreach=True), fused_optimizers (fused=True), autocast (float16/bfloat16, as
# declared in DTYPES), grad_scaler (torch.amp.GradScaler), pin_memory (DataLoader
# pinning for the device; needs a pinned-memory host allocator), inductor
# (torch.compile with backend="inductor": code generated for the device; slow to
# compile, level 3), compile_fullgraph (the compile suite's models and dynamic shapes
# compile without graph breaks or recompiles: they fail instead of being reported),
# bits_dtypes (torch.bits8/bits16 containers: bytes that only move), quantized
# (quantize_per_tensor/per_channel tensors carrying a scale and zero point).
# memory (large tensors within RESOURCE_LIMITS memory_mb, against CPU) and device_api
# (torch.<device>: is_available, device_count, synchronize, current_device), with
# their paths: memory_stats (memory_allocated, max_memory_allocated,
# reset_peak_memory_stats, empty_cache on the device module), oom (one allocation
# beyond the device's total_memory, else beyond memory_mb, raises
# torch.OutOfMemoryError; claim it only with one of the two known), device_properties
# (get_device_properties, get_device_name), streams and events (the device module's
# Stream and Event), device_generator (torch.Generator(device=DEVICE)). A function a
# claimed path needs and the device module lacks is unsupported, naming it.
# A case needing a capability not listed is not_run: capability_not_declared. Leave
# out what the backend does not do yet, and say why in a comment next to the list.
CAPABILITIES = [
{cap_lines}
]

# Semantic level run by default (--level overrides): 1 = fast primitive baseline,
# 4 = broad production behaviour, 8 = release depth.
LEVEL = {t["level"]}

# At most this many samples per op, variant and dtype (None: all samples).
MAX_SAMPLES_PER_OP = {t["samples"]!r}

# Tolerances over the defaults (integers and bool are always compared exactly):
# {{"dtypes": {{"float16": {{"atol": 1e-3, "rtol": 1e-3}}}},
#  "ops": {{"matmul": {{"float32": {{"atol": 1e-4, "rtol": 1e-4}}}}}}}}
TOLERANCES = {{}}

# Per-case limits; keys: case_timeout_s and hang_heartbeat_s (seconds, at most a
# week), memory_mb (whole MiB, at most 64 TiB), workers (1 to 1024).
RESOURCE_LIMITS = {{"case_timeout_s": 120}}

# Devices a case may use (multi-device checks need 2).
DEVICE_COUNT = 1

# Ops to leave out, each with a reason (reported as not_run: op_excluded), and
# optionally the only ops to include (globs allowed).
OPS = {{"include": [], "exclude": {{}}}}

# Ops the backend has no kernel for may run through its CPU fallback (MPS with
# PYTORCH_ENABLE_MPS_FALLBACK=1, XPU's, a PrivateUse1 backend's boxed fallback). Such
# a case is labelled and counted apart from native passes ("allow"), or, with
# "forbid", a passing one fails (implement_or_declare) naming the overloads that
# fell back, e.g. aten::linalg_svd.
CPU_FALLBACK = "allow"

{marker}'''
