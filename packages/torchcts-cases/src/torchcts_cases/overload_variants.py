"""The generated overload cases' variants: which kind of overload gets which, at what
level, under which manifest capability. Plain data (no torch), read by the catalog
when it lists cases and by the index when it builds them.

Levels: the explicit sibling call and the in-place mutation properties are cheap and
basic (2, with OpInfo's method and in-place variants); out= and its resize rule come
with OpInfo's out= cases (3); the dtype rule and direct backward calls with the deeper
variants (4). Level 1 (`make run`'s default) gets none of them. A case whose call is
built from the schema (no OpInfo sample reaches the overload) sits at level 3 or
above, as does every case of a multi-tensor kernel (``_foreach_*``, ``_fused_*``,
``_amp_*``: OpInfo's foreach cases and the training suite's fused optimizers are level
3 too). A fused optimizer step and the gradient scaler's kernels are claimed by their
feature capabilities (``fused_optimizers``, ``grad_scaler``), not by a variant's.
"""

from __future__ import annotations

from typing import Any

SUITE = "aten"  # case ids: aten/<overload>/<variant>/<dtype>/0
# the donor "op" of a call built from the schema (`overload_inputs`), not captured
SCHEMA_DONOR = "<schema>"
# the donor "op" of a call from a reviewed recipe (`overload_recipes`)
RECIPE_DONOR = "<recipe>"
SCHEMA_BUILT_LEVEL = 3  # a schema-built case's least level (its inputs are synthetic)

OUT = "out"
INPLACE = "inplace"
BACKWARD = "backward"
CALL = "call"
# writes arguments other than self alone or out= alone (a fused optimizer step writes
# its params, grads and moments; _amp_update_scale.out its out and growth_tracker)
WRITES = "writes"
KINDS = (OUT, INPLACE, BACKWARD, CALL, WRITES)

# kind of overload -> the variants generated for it
VARIANTS: dict[str, tuple[str, ...]] = {
    OUT: ("out", "out_resize", "out_dtype"),
    INPLACE: ("inplace",),
    BACKWARD: ("backward",),
    CALL: ("call",),
    WRITES: ("writes",),
}
# variant -> (level, capability)
VARIANT_FACTS: dict[str, tuple[int, str]] = {
    "call": (2, "forward"),
    "inplace": (2, "inplace"),
    "out": (3, "out"),
    "out_resize": (3, "out_semantics"),
    "out_dtype": (4, "out_semantics"),
    "backward": (4, "backward"),
    "writes": (3, "inplace"),
}
MULTI_TENSOR_LEVEL = 3  # _foreach_*, _fused_*, _amp_*: with OpInfo's foreach cases
# packet prefix -> the feature capability its kernels are claimed by
FEATURES = (("_fused_", "fused_optimizers"), ("_amp_", "grad_scaler"))


def variant_facts(variant: str, schema_built: bool, name: str = "") -> tuple[int, str]:
    """(level, capability) of a variant of overload `name`; a schema-built or
    recipe-built case sits at level 3 or above (its inputs are synthetic, not a
    sample's: deeper than the basics), as does a multi-tensor kernel's."""
    level, capability = VARIANT_FACTS[variant]
    if schema_built:
        level = max(level, SCHEMA_BUILT_LEVEL)
    if name.startswith(("_foreach_", "_fused_", "_amp_")):
        level = max(level, MULTI_TENSOR_LEVEL)
    for prefix, feature in FEATURES:
        if name.startswith(prefix):
            capability = feature
    return level, capability


def base_packet(packet: str) -> str:
    """The functional packet of an in-place one (``add_`` -> ``add``, ``__iand__`` ->
    ``__and__``); others are their own."""
    if packet.startswith("__i") and packet.endswith("__"):
        return "__" + packet[3:]
    if packet.endswith("_") and not packet.endswith("__"):
        return packet[:-1]
    return packet


def valid_entry(entry: Any) -> bool:
    """The shape of one shard entry (a cache file is never trusted blindly)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
        return False
    if "reason" in entry:
        return isinstance(entry["reason"], str)
    donor = entry.get("donor")
    variants = entry.get("variants")
    return (
        isinstance(entry.get("functional"), str)
        and isinstance(donor, dict)
        and isinstance(donor.get("op"), str)
        and isinstance(donor.get("dtype"), str)
        and isinstance(donor.get("grad"), bool)
        and isinstance(donor.get("overload"), str)
        and (donor["op"] != SCHEMA_DONOR or type(donor.get("plan")) is int)
        and isinstance(variants, list)
        and bool(variants)
        and all(v in VARIANTS.get(entry["kind"], ()) for v in variants)
        and isinstance(entry.get("skipped", {}), dict)
    )
