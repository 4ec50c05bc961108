"""Fault profiles: read a JSON profile, validate every key, and match rules to op calls.

A profile is data, not code, so that a manifest can name one and a reviewer can read
what a run injected. Every error names the file, the rule index and the key, because a
profile with a typo must never silently inject nothing.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

FAULT_KINDS = (
    "wrong_values",
    "wrong_dtype",
    "wrong_shape",
    "wrong_strides",
    "contiguous_copy",
    "not_implemented",
    "runtime_error",
    "poison",
    "segfault",
    "abort",
    "hang",
    "memory_blowup",
    "break_alias",
    "drop_inplace",
    "cpu_fallback",
    "uncounted_free",
    "phantom_device",
    "flush_nonfinite",
)
# Faults of the device module (torch.simdev), not of an op call: the rule's `op` names
# the one module function each breaks, spelled simdev::<function>, and nothing else
# narrows it (the module is not called per op).
DEVICE_FAULTS = {
    # freed storages stay counted: memory_allocated (and its peak) never go down
    "uncounted_free": "simdev::memory_allocated",
    # device_count() reports a second device; tensors asked for on it land on simdev:0
    "phantom_device": "simdev::device_count",
}
CRASH_KINDS = ("segfault", "abort", "hang", "memory_blowup")
# Not a fault in one call but a missing kernel: the overload has no simdev kernel, so
# the dispatcher hands it to the backend's boxed fallback, which runs it on the CPU
# (and warns the way the MPS fallback does). Dispatch picks a kernel per overload, so
# only `op` and `note` apply.
CPU_FALLBACK = "cpu_fallback"
_CALL_KEYS = ("dtype", "ndim", "shape", "min_numel", "max_numel", "inplace", "expanded")
MAGNITUDES = ("small", "large")
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
RULE_KEYS = {
    "op": "aten overload glob(s), spelled like 'aten::add.Tensor', or for a device "
    "fault the torch.simdev function it breaks, 'simdev::device_count' (required)",
    "fault": "one of the fault kinds (required)",
    "dtype": "dtype name(s) of the first tensor argument",
    "ndim": "exact number of dimensions of the first tensor argument",
    "shape": "exact shape of the first tensor argument, a list of ints",
    "min_numel": "smallest numel of the first tensor argument",
    "max_numel": "largest numel of the first tensor argument",
    "inplace": "true: only calls that write an argument they also read (x.add_(y)); "
    "false: only calls that do not",
    "expanded": "true: only calls whose first tensor argument is expanded (a dim of "
    "size > 1 with stride 0); false: only calls whose first tensor is not",
    "magnitude": "wrong_values only: 'small' (10x tolerance) or 'large'",
    "max_mb": "memory_blowup only: MiB allocated before raising OutOfMemoryError",
    "own_kernel": "true: simdev registers a kernel of its own for the overloads op "
    "names exactly (no globs) while the profile is active, where PyTorch's generic "
    "kernel would otherwise serve them and the fault could not reach them",
    "note": "free text saying why the rule exists",
}
PROFILE_KEYS = ("name", "description", "rules")
SHIPPED = ("clean", "demo", "float16_partial")
_OP_GLOB = re.compile(r"[A-Za-z0-9_*?\[\]]+::[A-Za-z0-9_.*?\[\]]+|\*")


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file, rule and key."""


@dataclass(frozen=True)
class FaultRule:
    """One rule: which calls it matches and the single fault it injects."""

    index: int
    ops: tuple[str, ...]
    fault: str
    dtypes: tuple[str, ...] = ()
    ndim: int | None = None
    shape: tuple[int, ...] | None = None
    min_numel: int | None = None
    max_numel: int | None = None
    inplace: bool | None = None
    expanded: bool | None = None
    magnitude: str = "small"
    max_mb: int = 4096
    own_kernel: bool = False
    note: str = ""

    def matches_name(self, name: str) -> bool:
        """Whether the overload name (``aten::sin.out``) matches one of the globs."""
        return any(fnmatch.fnmatchcase(name, glob) for glob in self.ops)

    def matches_call(
        self,
        dtype: str | None,
        shape: tuple[int, ...] | None,
        inplace: bool = False,
        expanded: bool = False,
    ) -> bool:
        """Whether the narrowing keys accept a call whose first tensor is given."""
        if self.dtypes and dtype not in self.dtypes:
            return False
        if self.inplace is not None and inplace != self.inplace:
            return False
        if self.expanded is not None and expanded != self.expanded:
            return False
        if (self.ndim, self.shape, self.min_numel, self.max_numel) == (None,) * 4:
            return True
        if shape is None:
            return False
        if self.ndim is not None and len(shape) != self.ndim:
            return False
        if self.shape is not None and shape != self.shape:
            return False
        numel = 1
        for size in shape:
            numel *= size
        if self.min_numel is not None and numel < self.min_numel:
            return False
        return self.max_numel is None or numel <= self.max_numel


@dataclass(frozen=True)
class FaultProfile:
    """A validated profile; ``source`` is a shipped name or the path it came from."""

    name: str
    source: str
    description: str = ""
    rules: tuple[FaultRule, ...] = field(default_factory=tuple)

    def rules_for(self, name: str) -> tuple[FaultRule, ...]:
        """The per-call rules whose op globs match the overload name, in profile
        order (cpu_fallback rules act on registration instead, `falls_back`)."""
        return tuple(
            rule
            for rule in self.rules
            if rule.fault != CPU_FALLBACK and rule.matches_name(name)
        )

    @property
    def device_faults(self) -> frozenset[str]:
        """The device-module faults (DEVICE_FAULTS) the profile turns on."""
        return frozenset(r.fault for r in self.rules if r.fault in DEVICE_FAULTS)

    @property
    def fallback_rules(self) -> tuple[FaultRule, ...]:
        """The cpu_fallback rules, in profile order."""
        return tuple(rule for rule in self.rules if rule.fault == CPU_FALLBACK)

    @property
    def own_kernels(self) -> tuple[str, ...]:
        """The overloads own_kernel rules name, in profile order."""
        names = (op for rule in self.rules if rule.own_kernel for op in rule.ops)
        return tuple(dict.fromkeys(names))

    def falls_back(self, name: str) -> bool:
        """Whether a cpu_fallback rule leaves the overload without a simdev kernel."""
        return any(rule.matches_name(name) for rule in self.fallback_rules)


CLEAN = FaultProfile(name="clean", source="clean", description="no faults")


def load_profile(spec: str | Path | dict[str, Any]) -> FaultProfile:
    """Load a shipped profile by name, a JSON file by path, or an in-memory dict."""
    if isinstance(spec, dict):
        return validate_profile(spec, "<dict>")
    text_spec = str(spec)
    if isinstance(spec, str) and text_spec in SHIPPED:
        package = resources.files("torchcts_simdev").joinpath("profiles")
        text = package.joinpath(f"{text_spec}.json").read_text(encoding="utf-8")
        return validate_profile(_parse(text, text_spec), text_spec)
    path = Path(text_spec)
    if not path.is_file():
        raise ProfileError(
            f"{text_spec}: no such profile file, and not a shipped profile name "
            f"(shipped: {', '.join(SHIPPED)})"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{text_spec}: cannot read profile ({exc})") from None
    return validate_profile(_parse(text, text_spec), text_spec)


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(
            f"{where}: not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None


def validate_profile(raw: Any, where: str) -> FaultProfile:
    """Check every key of a parsed profile; the first problem raises ProfileError."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: a profile must be a JSON object with 'rules'")
    unknown = sorted(set(raw) - set(PROFILE_KEYS))
    if unknown:
        raise ProfileError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(PROFILE_KEYS)})"
        )
    name = raw.get("name", Path(where).stem)
    description = raw.get("description", "")
    for key, value in (("name", name), ("description", description)):
        if not isinstance(value, str):
            raise ProfileError(f"{where}: {key} must be a string, not {value!r}")
    rules = raw.get("rules")
    if not isinstance(rules, list):
        raise ProfileError(f"{where}: 'rules' must be a list of rule objects")
    parsed = tuple(_rule(rule, index, where) for index, rule in enumerate(rules))
    return FaultProfile(name=name, source=where, description=description, rules=parsed)


def _rule(raw: Any, index: int, where: str) -> FaultRule:
    at = f"{where}: rules[{index}]"
    if not isinstance(raw, dict):
        raise ProfileError(f"{at}: a rule must be a JSON object, not {raw!r}")
    unknown = sorted(set(raw) - set(RULE_KEYS))
    if unknown:
        raise ProfileError(
            f"{at}: unknown key {unknown[0]!r} (known: {', '.join(RULE_KEYS)})"
        )
    for required in ("op", "fault"):
        if required not in raw:
            raise ProfileError(f"{at}: missing required key {required!r}")
    ops = _strings(raw["op"], f"{at}.op")
    for glob in ops:
        if not _OP_GLOB.fullmatch(glob):
            raise ProfileError(
                f"{at}.op: {glob!r} is not an overload glob spelled like "
                "'aten::add.Tensor', 'aten::sin' or 'aten::sin*'"
            )
    fault = raw["fault"]
    if fault not in FAULT_KINDS:
        raise ProfileError(
            f"{at}.fault: unknown fault {fault!r} (known: {', '.join(FAULT_KINDS)})"
        )
    if fault in DEVICE_FAULTS:
        if ops != (DEVICE_FAULTS[fault],):
            raise ProfileError(
                f"{at}.op: {fault} breaks {DEVICE_FAULTS[fault]}, a device-module "
                f"function; op must be exactly that, not {list(ops)!r}"
            )
        for key in _CALL_KEYS:
            if key in raw:
                raise ProfileError(
                    f"{at}.{key}: {fault} is a fault of the device module, which is "
                    "not called per op: only op and note apply"
                )
    if fault == CPU_FALLBACK:
        for key in _CALL_KEYS:
            if key in raw:
                raise ProfileError(
                    f"{at}.{key}: cpu_fallback applies to whole overloads (the "
                    "dispatcher picks a kernel per overload, not per call)"
                )
    dtypes = _strings(raw.get("dtype", []), f"{at}.dtype") if "dtype" in raw else ()
    for dtype in dtypes:
        if dtype not in DTYPE_NAMES:
            raise ProfileError(
                f"{at}.dtype: unknown dtype {dtype!r} (known: {', '.join(DTYPE_NAMES)})"
            )
    shape = raw.get("shape")
    if shape is not None and (
        not isinstance(shape, list) or not all(_is_count(s) for s in shape)
    ):
        raise ProfileError(f"{at}.shape: must be a list of non-negative ints")
    counts = {k: raw.get(k) for k in ("ndim", "min_numel", "max_numel")}
    for key, value in counts.items():
        if value is not None and not _is_count(value):
            raise ProfileError(f"{at}.{key}: must be a non-negative int, not {value!r}")
    inplace = raw.get("inplace")
    expanded = raw.get("expanded")
    for key, flag in (("inplace", inplace), ("expanded", expanded)):
        if flag is not None and not isinstance(flag, bool):
            raise ProfileError(f"{at}.{key}: must be true or false, not {flag!r}")
    magnitude = raw.get("magnitude", "small")
    if "magnitude" in raw and fault != "wrong_values":
        raise ProfileError(f"{at}.magnitude: only applies to fault 'wrong_values'")
    if magnitude not in MAGNITUDES:
        raise ProfileError(f"{at}.magnitude: must be 'small' or 'large'")
    max_mb = raw.get("max_mb", 4096)
    if "max_mb" in raw and fault != "memory_blowup":
        raise ProfileError(f"{at}.max_mb: only applies to fault 'memory_blowup'")
    if not _is_count(max_mb) or max_mb < 1:
        raise ProfileError(f"{at}.max_mb: must be a positive int, not {max_mb!r}")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ProfileError(f"{at}.note: must be a string")
    own_kernel = raw.get("own_kernel", False)
    if not isinstance(own_kernel, bool):
        raise ProfileError(f"{at}.own_kernel: must be true or false")
    if own_kernel and any(c in glob for glob in ops for c in "*?["):
        raise ProfileError(
            f"{at}.own_kernel: op must name overloads exactly, not by glob {ops!r}"
        )
    return FaultRule(
        index=index,
        ops=ops,
        fault=fault,
        dtypes=dtypes,
        ndim=counts["ndim"],
        shape=None if shape is None else tuple(shape),
        min_numel=counts["min_numel"],
        max_numel=counts["max_numel"],
        inplace=inplace,
        expanded=expanded,
        magnitude=magnitude,
        max_mb=max_mb,
        own_kernel=own_kernel,
        note=note,
    )


def _strings(value: Any, at: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise ProfileError(f"{at}: must be a string or a non-empty list of strings")
    return tuple(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
