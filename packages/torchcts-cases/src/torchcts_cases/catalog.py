"""Every case TorchCTS knows for the installed torch, as cheap `CaseSpec` objects.

OpInfo cases come from the cached case index (no sample is built); hand-written cases
come from the suite modules. `get_case` rebuilds one spec from its id, which is what a
fresh worker or child process does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from torchcts_schema import DTYPE_NAMES, ExpectedSource, make_case_id, split_case_id

from torchcts_cases import index
from torchcts_cases.levels import dtype_tier, is_primitive, opinfo_level
from torchcts_cases.overload_variants import (
    RECIPE_DONOR,
    SCHEMA_DONOR,
    base_packet,
    variant_facts,
)
from torchcts_cases.overload_variants import SUITE as OVERLOAD_SUITE
from torchcts_cases.spec import CaseSpec

OPINFO_SUITE = "opinfo"
VARIANT_ORDER = (
    "forward",
    "method",
    "inplace",
    "out",
    "noncontiguous",
    "nonfinite",
    "backward",
    "error_inputs",
)


def opinfo_groups(dtype: str | None) -> Iterator[tuple[str, dict[str, Any], str, int]]:
    """(op, index entry, variant, sample count) of one dtype, in run order."""
    entries = index.shard(index.ERRORS_SHARD if dtype is None else dtype)
    for op in sorted(entries):
        entry = entries[op]
        counts = entry["counts"]
        for variant in VARIANT_ORDER:
            if counts.get(variant):
                yield op, entry, variant, counts[variant]


def opinfo_cases(dtype: str | None) -> Iterator[CaseSpec]:
    """OpInfo cases of one dtype (None: the dtype-less error-input cases), in order."""
    for op, entry, variant, count in opinfo_groups(dtype):
        yield from group_specs(op, entry, variant, dtype, range(count))


def group_prefix(op: str, variant: str, dtype: str | None) -> str:
    """The case id of sample N of one (op, variant, dtype) group is this plus N."""
    return make_case_id(OPINFO_SUITE, op, variant, dtype, 0)[:-1]


def group_source(entry: dict[str, Any], variant: str) -> ExpectedSource:
    """What the cases of one group are compared against."""
    return ExpectedSource(
        "cpu_reference" if variant == "error_inputs" else entry["source"]
    )


def group_specs(
    op: str,
    entry: dict[str, Any],
    variant: str,
    dtype: str | None,
    samples: Iterable[int],
) -> Iterator[CaseSpec]:
    """Specs of some samples of one (op, variant, dtype) group.

    The id is validated once per group; per-sample work is a string join, which keeps
    listing the whole matrix fast.
    """
    prefix = group_prefix(op, variant, dtype)
    source = group_source(entry, variant)
    family = entry["family"]
    surfaces = tuple(entry.get("surfaces", ()))
    edges = primitive_edges(op, entry, variant)
    if variant == "inplace" and entry.get("inplace_surfaces"):
        surfaces = tuple(entry["inplace_surfaces"])
    for sample in samples:
        yield CaseSpec(
            f"{prefix}{sample}",
            OPINFO_SUITE,
            op,
            variant,
            dtype,
            sample,
            opinfo_level(family, variant, dtype, sample, sample in edges),
            source,
            variant,
            surfaces,
        )


def primitive_edges(op: str, entry: dict[str, Any], variant: str) -> Collection[int]:
    """The samples of one group that are a primitive op's level-1 samples: sample 0
    and the edge samples of its pass (every error input); none for other ops."""
    if not is_primitive(op):
        return ()
    if variant == "error_inputs":
        return range(entry["counts"].get("error_inputs", 0))
    stream = "backward" if variant == "backward" else "forward"
    return frozenset([0, *entry.get(index.EDGE_SAMPLES, {}).get(stream, ())])


def opinfo_entry(spec: CaseSpec) -> dict[str, Any]:
    """The index facts behind an OpInfo spec."""
    entries = index.shard(index.ERRORS_SHARD if spec.dtype is None else spec.dtype)
    return entries[spec.op]


def built_sample(entry: dict[str, Any], variant: str, sample: int) -> int:
    """The OpInfo sample case `sample` of a variant is built from.

    Every variant's case N is sample N, except nonfinite: its cases number only the
    forward samples a non-finite value can be placed in, which the index lists when
    some sample is left out.
    """
    if variant != "nonfinite":
        return sample
    samples = entry.get(index.NONFINITE_SAMPLES)
    return sample if samples is None else int(samples[sample])


def overload_cases() -> Iterator[tuple[CaseSpec, str]]:
    """The generated overload cases (`overload_index`), each with the name a
    manifest's OPS and DTYPES match it by (its functional packet: ``add`` for
    ``add_.Tensor``), in overload order."""
    for name, entry in sorted(index.shard(index.OVERLOADS_SHARD).items()):
        if "reason" in entry:
            continue
        packet = base_packet(name.partition(".")[0])
        for variant in entry["variants"]:
            yield overload_spec(name, variant, entry), packet


def overload_spec(name: str, variant: str, entry: dict[str, Any]) -> CaseSpec:
    """The spec of one generated overload case (sample 0: its first donor)."""
    dtype = entry["donor"]["dtype"]
    built = entry["donor"]["op"] in (SCHEMA_DONOR, RECIPE_DONOR)
    level, capability = variant_facts(variant, built, name)
    return CaseSpec(
        make_case_id(OVERLOAD_SUITE, name, variant, dtype, 0),
        OVERLOAD_SUITE,
        name,
        variant,
        dtype,
        0,
        max(level, dtype_tier(dtype)),
        ExpectedSource.CPU_REFERENCE,
        capability,
        (f"aten::{name}",),
    )


def _overload_case(
    case_id: str, op: str, variant: str, dtype: str | None, sample: int | None
) -> CaseSpec:
    """The spec of a generated overload case id; KeyError when the index has none."""
    generated = index.shard(index.OVERLOADS_SHARD).get(op, {})
    if (
        "reason" in generated
        or variant not in generated.get("variants", ())
        or dtype is None
        or dtype != generated["donor"]["dtype"]
        or sample != 0
    ):
        raise KeyError(f"no generated overload case {case_id!r} in this torch")
    return overload_spec(op, variant, generated)


def overload_entry(spec: CaseSpec) -> dict[str, Any]:
    """The index entry behind a generated overload case."""
    return index.shard(index.OVERLOADS_SHARD)[spec.op]


def get_case(case_id: str) -> CaseSpec:
    """The spec of one case id; KeyError when this torch has no such case."""
    try:
        suite, op, variant, dtype, sample = split_case_id(case_id)
    except ValueError as exc:
        raise KeyError(str(exc)) from None
    if suite == OVERLOAD_SUITE:
        return _overload_case(case_id, op, variant, dtype, sample)
    if suite != OPINFO_SUITE:
        from torchcts_cases.suites import hand_case

        spec = hand_case(case_id).spec
        assert spec is not None
        return spec
    if dtype is not None and dtype not in DTYPE_NAMES:
        raise KeyError(f"case {case_id!r}: unknown dtype {dtype!r}")
    if (variant == "error_inputs") != (dtype is None):
        raise KeyError(f"case {case_id!r}: only error_inputs cases have no dtype")
    entry = index.shard(index.ERRORS_SHARD if dtype is None else dtype).get(op)
    if (
        entry is None
        or sample is None
        or not 0 <= sample < entry["counts"].get(variant, 0)
    ):
        raise KeyError(f"no case {case_id!r} in this torch's OpInfo")
    return next(group_specs(op, entry, variant, dtype, range(sample, sample + 1)))
