"""The generated overload cases' variants: which kind of overload gets which, at what
level, under which manifest capability. Plain data (no torch), read by the catalog
when it lists cases and by the index when it builds them.

Levels: the explicit sibling call and the in-place mutation properties are cheap and
basic (2, with OpInfo's method and in-place variants); out= and its resize rule come
with OpInfo's out= cases (3); the dtype rule and direct backward calls with the deeper
variants (4). Level 1 (`make run`'s default) gets none of them. A case whose call is
built from the schema (no OpInfo sample reaches the overload) sits at level 3 or
above.
"""

from __future__ import annotations

from typing import Any

SUITE = "aten"  # case ids: aten/<overload>/<variant>/<dtype>/0
# the donor "op" of a call built from the schema (`overload_inputs`), not captured
SCHEMA_DONOR = "<schema>"
SCHEMA_BUILT_LEVEL = 3  # a schema-built case's least level (its inputs are synthetic)

OUT = "out"
INPLACE = "inplace"
BACKWARD = "backward"
CALL = "call"
KINDS = (OUT, INPLACE, BACKWARD, CALL)

# kind of overload -> the variants generated for it
VARIANTS: dict[str, tuple[str, ...]] = {
    OUT: ("out", "out_resize", "out_dtype"),
    INPLACE: ("inplace",),
    BACKWARD: ("backward",),
    CALL: ("call",),
}
# variant -> (level, capability)
VARIANT_FACTS: dict[str, tuple[int, str]] = {
    "call": (2, "forward"),
    "inplace": (2, "inplace"),
    "out": (3, "out"),
    "out_resize": (3, "out_semantics"),
    "out_dtype": (4, "out_semantics"),
    "backward": (4, "backward"),
}


def variant_facts(variant: str, schema_built: bool) -> tuple[int, str]:
    """(level, capability) of a variant; a schema-built case sits at level 3 or
    above (its inputs are the schema's, not a sample's: deeper than the basics)."""
    level, capability = VARIANT_FACTS[variant]
    return (max(level, SCHEMA_BUILT_LEVEL) if schema_built else level), capability


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
