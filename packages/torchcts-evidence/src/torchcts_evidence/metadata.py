"""Type checks on run metadata that the schema's loader does not make.

A run's metadata drives the archive name, SUBMISSION.json, evidence entries and every
summary; a hostile or damaged artifact must be refused with the field named, not crash
one of them later.
"""

from __future__ import annotations

from dataclasses import fields

from torchcts_schema import RunArtifact, RunMetadata

METADATA_TYPES: dict[str, tuple[type, ...]] = {
    "ended_at": (str, type(None)),
    "completed_normally": (bool,),
    "counts": (dict,),
    "level": (int, type(None)),
    "options": (dict,),
    "probes": (dict,),
}  # every other field is a string


def metadata_problems(artifact: RunArtifact) -> list[str]:
    """Field types the schema's loader does not check, so the summary can trust them."""
    problems = []
    for f in fields(RunMetadata):
        value = getattr(artifact.metadata, f.name)
        kinds = METADATA_TYPES.get(f.name, (str,))
        if not isinstance(value, kinds) or (
            isinstance(value, bool) and bool not in kinds
        ):
            names = " or ".join(
                "null" if k is type(None) else k.__name__ for k in kinds
            )
            problems.append(f"{f.name} is {type(value).__name__}, not {names}")
    return problems
