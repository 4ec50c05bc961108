"""The manifest schema: which keys a ``manifest.py`` may declare and what they mean.

`load_manifest` reads a manifest statically and validates every key, naming the key and
the value in each error. Op-name checks need torch and live in torchcts_cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema.errors import ManifestError
from torchcts_schema.manifest_limits import RESOURCE_LIMIT_MAX, check_limits
from torchcts_schema.manifest_reader import manifest_digest, read_manifest_file

DTYPE_NAMES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
)

VARIANT_CAPABILITIES = (
    "forward",
    "method",
    "inplace",
    "out",
    "backward",
    "error_inputs",
    "noncontiguous",
    # the forward sample with NaN, +Inf and -Inf written into its floating and complex
    # tensors: whether the backend propagates non-finite values as CPU does (masking
    # with -inf, NaN checks) and raises where CPU raises on them. A metadata-only
    # device (meta) cannot tell these cases from forward ones, so it does not claim it.
    "nonfinite",
)
SUITE_CAPABILITIES = (
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
    # edge shapes and scale (levels 7-8): zero-size and rank 8-16 tensors, overlapping
    # and expanded strides, thousands of small allocations, a 300-op chain, and a
    # tensor of 1/16 of RESOURCE_LIMITS memory_mb (64 MiB without one)
    "stress",
    "dtypes",  # casts and ops in complex, unsigned and float8 dtypes, bit for bit
    "memory",  # large tensors within RESOURCE_LIMITS memory_mb, against CPU
    "device_api",  # the device module: availability, count, current device, sync
)
# Paths inside a suite that a backend may support or not on their own; a case that
# needs one is not_run (capability_not_declared) unless the manifest claims it too.
FEATURE_CAPABILITIES = (
    "foreach_optimizers",  # torch.optim with foreach=True (the _foreach_* kernels)
    "fused_optimizers",  # torch.optim with fused=True (_fused_adam_, _fused_sgd_, ...)
    "autocast",  # torch.autocast(device_type=DEVICE) in float16 and bfloat16
    "grad_scaler",  # torch.amp.GradScaler(DEVICE): unscale, inf checks, scale update
    "pin_memory",  # DataLoader(pin_memory=True, pin_memory_device=DEVICE)
    "inductor",  # torch.compile(backend="inductor") generates code for the device
    # torch.compile captures the compile suite's functions without graph breaks and
    # compiles dynamic shapes once: breaks and recompiles fail instead of being reported
    "compile_fullgraph",
    # the dtypes suite's containers, whose dtypes DTYPES cannot name: torch.bits8 and
    # bits16 (bytes that only move: views, copies, cat), and quantized tensors
    # (quantize_per_tensor/per_channel into quint8, qint8, qint32: a scale and zero
    # point carried by the tensor, served by the backend's quantized dispatch key;
    # torch 2.13 deprecates their creation functions)
    "bits_dtypes",
    "quantized",
    # memory_allocated, max_memory_allocated, reset_peak_memory_stats and empty_cache
    # on the device module count what the device's allocator holds
    "memory_stats",
    # an allocation beyond the device's memory (its total_memory, else memory_mb)
    # raises torch.OutOfMemoryError and the device works afterwards
    "oom",
    # get_device_properties(i) (name, total_memory) and get_device_name(i) agree
    "device_properties",
    "streams",  # the device module's Stream, current_stream and stream(): ordering
    "events",  # the device module's Event: record, synchronize, query, elapsed_time
    "device_generator",  # torch.Generator(device=DEVICE): seeds, state round trip
)
CAPABILITY_NAMES = VARIANT_CAPABILITIES + SUITE_CAPABILITIES + FEATURE_CAPABILITIES

DEFAULT_UNSUPPORTED_PATTERNS = (
    r"not implemented",
    r"not supported",
    r"NotImplementedError",
    r"Could not run '.*' with arguments from the '.*' backend",
    r"unsupported",
    # PyTorch's generic kernels that gate on the device type ("mode only supports CPU,
    # CUDA and XPU device type, got: <device>", mode.values): the backend has no kernel
    # of its own for that overload, and the generic one refuses its device
    r"only supports .* device types?, got",
)

# "allow": a case that ran through the device's CPU fallback keeps its status and is
# labelled and counted apart; "forbid": such a case that passed is failed
# (implement_or_declare), its record naming the overloads that fell back
CPU_FALLBACK_POLICIES = ("allow", "forbid")

KEYS: dict[str, str] = {
    "DEVICE": "device type string, e.g. 'cuda', 'mps', 'simdev' (required)",
    "BACKEND_NAME": "human name of the backend under test",
    "BACKEND_IMPORT": "module imported before the run to register the backend",
    "BACKEND_OPTIONS": "dict passed to the backend (e.g. simdev's fault_profile)",
    "DTYPES": "dict dtype -> True, False, or a regex of ops supported in that dtype",
    "CAPABILITIES": "list of declared capabilities (variants and hand-written suites)",
    "LEVEL": "semantic level 1-8 run by default",
    "MAX_SAMPLES_PER_OP": "at most this many samples per op, variant and dtype",
    "TOLERANCES": "{'dtypes': {dtype: {atol, rtol}}, 'ops': {op: {dtype: {atol, rtol}}}}",
    "RESOURCE_LIMITS": "dict with "
    + ", ".join(f"{k} (at most {most:,})" for k, most in RESOURCE_LIMIT_MAX.items()),
    "DEVICE_COUNT": "number of devices available to a case",
    "UNSUPPORTED_PATTERNS": "regexes that mark an exception message as 'unsupported'",
    "OPS": "{'include': [op globs], 'exclude': {op glob: reason}}",
    "CPU_FALLBACK": "'allow' (label and count cases that ran through a CPU fallback) "
    "or 'forbid' (such a passing case fails)",
    "TEMPLATE": "True in an unedited template; delete the line once you edit it",
}


@dataclass(frozen=True)
class Manifest:
    """A validated manifest; defaults apply to every key it does not set."""

    path: Path
    digest: str
    device: str
    backend_name: str
    backend_import: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, bool | str] = field(default_factory=lambda: {"float32": True})
    capabilities: tuple[str, ...] = ("forward",)
    level: int = 1
    max_samples_per_op: int | None = None
    tolerances: dict[str, Any] = field(default_factory=dict)
    resource_limits: dict[str, float] = field(default_factory=dict)
    device_count: int = 1
    unsupported_patterns: tuple[str, ...] = DEFAULT_UNSUPPORTED_PATTERNS
    ops_include: tuple[str, ...] = ()
    ops_exclude: dict[str, str] = field(default_factory=dict)
    cpu_fallback: str = "allow"  # one of CPU_FALLBACK_POLICIES
    template: bool = False


def load_manifest(path: Path | str) -> Manifest:
    """Read and validate `path` without executing it."""
    path = Path(path)
    raw = read_manifest_file(path)
    return validate_manifest(raw, path, manifest_digest(path))


def validate_manifest(raw: dict[str, Any], path: Path, digest: str) -> Manifest:
    """Check every key of `raw`; the first problem raises `ManifestError` naming it."""
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ManifestError(
            path, f"unknown key {unknown[0]} (known: {', '.join(KEYS)})"
        )
    device = raw.get("DEVICE")
    if not isinstance(device, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", device):
        raise ManifestError(
            path, f"DEVICE must be a lower-case device type, not {device!r}"
        )
    dtypes = _dtypes(raw.get("DTYPES", {"float32": True}), path)
    caps = raw.get("CAPABILITIES", ["forward"])
    if not isinstance(caps, list | tuple) or not all(isinstance(c, str) for c in caps):
        raise ManifestError(path, "CAPABILITIES must be a list of names")
    for index, cap in enumerate(caps):
        if cap not in CAPABILITY_NAMES:
            raise ManifestError(
                path,
                f"CAPABILITIES: unknown capability {cap!r} (known: {', '.join(CAPABILITY_NAMES)})",
            )
        # a claim is made once: a second is a slip (a merge, a copy) that hides
        # which line a reviewer should read
        if cap in caps[:index]:
            raise ManifestError(path, f"CAPABILITIES: {cap!r} is listed twice")
    level = raw.get("LEVEL", 1)
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 8:
        raise ManifestError(path, f"LEVEL must be an integer 1-8, not {level!r}")
    samples = raw.get("MAX_SAMPLES_PER_OP")
    if samples is not None and (
        not isinstance(samples, int) or isinstance(samples, bool) or samples < 1
    ):
        raise ManifestError(
            path,
            f"MAX_SAMPLES_PER_OP must be a positive integer or None, not {samples!r}",
        )
    count = raw.get("DEVICE_COUNT", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ManifestError(
            path, f"DEVICE_COUNT must be a non-negative integer, not {count!r}"
        )
    patterns = raw.get("UNSUPPORTED_PATTERNS", list(DEFAULT_UNSUPPORTED_PATTERNS))
    if not isinstance(patterns, list | tuple):
        raise ManifestError(path, "UNSUPPORTED_PATTERNS must be a list of regexes")
    for pattern in patterns:
        _unsupported_pattern(pattern, path)
    include, exclude = _ops(raw.get("OPS", {}), path)
    options = raw.get("BACKEND_OPTIONS", {})
    if not isinstance(options, dict):
        raise ManifestError(path, "BACKEND_OPTIONS must be a dict")
    backend_import = raw.get("BACKEND_IMPORT")
    if backend_import is not None and (
        not isinstance(backend_import, str)
        or not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", backend_import)
    ):
        raise ManifestError(
            path, f"BACKEND_IMPORT must be a dotted module name, not {backend_import!r}"
        )
    name = raw.get("BACKEND_NAME", device)
    if not isinstance(name, str) or not name.strip():
        raise ManifestError(path, "BACKEND_NAME must be a non-empty string")
    template = raw.get("TEMPLATE", False)
    if not isinstance(template, bool):
        raise ManifestError(path, "TEMPLATE must be True or False")
    fallback = raw.get("CPU_FALLBACK", "allow")
    if fallback not in CPU_FALLBACK_POLICIES:
        raise ManifestError(
            path, f"CPU_FALLBACK must be 'allow' or 'forbid', not {fallback!r:.60}"
        )
    return Manifest(
        path=path,
        digest=digest,
        device=device,
        backend_name=name,
        backend_import=backend_import,
        backend_options=dict(options),
        dtypes=dtypes,
        capabilities=tuple(caps),
        level=level,
        max_samples_per_op=samples,
        tolerances=_tolerances(raw.get("TOLERANCES", {}), path),
        resource_limits=check_limits(raw.get("RESOURCE_LIMITS", {}), path),
        device_count=count,
        unsupported_patterns=tuple(patterns),
        ops_include=include,
        ops_exclude=exclude,
        cpu_fallback=fallback,
        template=template,
    )


def dtype_claims(support: bool | str | re.Pattern[str], op: str, name: str) -> bool:
    """Does a `DTYPES` value claim an op? A regex claims it when it fully matches the
    op's full segment (``max.binary``) or its OpInfo name (``max``), so no regex can
    claim ``round`` without claiming every ``round.*`` variant. Selection and dtype
    discovery both decide with this one rule."""
    if isinstance(support, bool):
        return support
    rx = re.compile(support) if isinstance(support, str) else support
    return bool(rx.fullmatch(op) or rx.fullmatch(name))


def _regex(pattern: Any, key: str, path: Path) -> None:
    if not isinstance(pattern, str):
        raise ManifestError(path, f"{key}: {pattern!r} is not a regex string")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ManifestError(path, f"{key}: invalid regex {pattern!r} ({exc})") from None


def _unsupported_pattern(pattern: Any, path: Path) -> None:
    """A regex that can match nothing-in-particular would call every exception
    unsupported, turning real runtime errors into a milder status; refused."""
    _regex(pattern, "UNSUPPORTED_PATTERNS", path)
    if not pattern.strip():
        raise ManifestError(
            path,
            f"UNSUPPORTED_PATTERNS: {pattern!r} is empty or only whitespace, so it "
            "would call (nearly) every error unsupported",
        )
    # matched as the runner matches them (case-insensitive search)
    if re.compile(pattern, re.IGNORECASE).search("") is not None:
        raise ManifestError(
            path,
            f"UNSUPPORTED_PATTERNS: {pattern!r:.80} matches the empty string, so it "
            "would call every error unsupported",
        )


def _dtypes(value: Any, path: Path) -> dict[str, bool | str]:
    if not isinstance(value, dict) or not value:
        raise ManifestError(
            path, "DTYPES must be a non-empty dict of dtype -> True/False/regex"
        )
    for dtype, support in value.items():
        if dtype not in DTYPE_NAMES:
            raise ManifestError(
                path,
                f"DTYPES: unknown dtype {dtype!r} (known: {', '.join(DTYPE_NAMES)})",
            )
        if not isinstance(support, bool):
            _regex(support, f"DTYPES[{dtype!r}]", path)
    return dict(value)


def _tolerance_pair(value: Any, key: str, path: Path) -> None:
    if not isinstance(value, dict) or not value or set(value) - {"atol", "rtol"}:
        raise ManifestError(
            path, f"{key}: must be a dict with 'atol' and/or 'rtol', not {value!r}"
        )
    for name, number in value.items():
        if (
            isinstance(number, bool)
            or not isinstance(number, int | float)
            or not 0 <= number < float("inf")
        ):
            raise ManifestError(
                path, f"{key}.{name}: {number!r} is not a finite non-negative number"
            )


def _tolerances(value: Any, path: Path) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) - {"dtypes", "ops"}:
        raise ManifestError(
            path, "TOLERANCES must be a dict with keys 'dtypes' and/or 'ops'"
        )
    for dtype, pair in value.get("dtypes", {}).items():
        if dtype not in DTYPE_NAMES:
            raise ManifestError(path, f"TOLERANCES.dtypes: unknown dtype {dtype!r}")
        _tolerance_pair(pair, f"TOLERANCES.dtypes[{dtype!r}]", path)
    for op, per_dtype in value.get("ops", {}).items():
        if not isinstance(per_dtype, dict):
            raise ManifestError(
                path, f"TOLERANCES.ops[{op!r}] must be a dict of dtype -> tolerance"
            )
        for dtype, pair in per_dtype.items():
            if dtype not in DTYPE_NAMES:
                raise ManifestError(
                    path, f"TOLERANCES.ops[{op!r}]: unknown dtype {dtype!r}"
                )
            _tolerance_pair(pair, f"TOLERANCES.ops[{op!r}][{dtype!r}]", path)
    return dict(value)


def _ops(value: Any, path: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    if not isinstance(value, dict) or set(value) - {"include", "exclude"}:
        raise ManifestError(
            path, "OPS must be a dict with keys 'include' and/or 'exclude'"
        )
    include = value.get("include", [])
    if not isinstance(include, list | tuple) or not all(
        isinstance(i, str) for i in include
    ):
        raise ManifestError(path, "OPS.include must be a list of op globs")
    exclude = value.get("exclude", {})
    if not isinstance(exclude, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip()
        for k, v in exclude.items()
    ):
        raise ManifestError(path, "OPS.exclude must map op globs to a non-empty reason")
    return tuple(include), dict(exclude)
