"""`check-manifest`: the schema checks plus op names checked against this torch.

An op name that matches no op is an error listing the closest names, so a typo never
silently selects nothing.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from pathlib import Path

from torchcts_schema import Manifest, ManifestError, load_manifest

from torchcts_cases import index
from torchcts_cases.catalog import overload_cases
from torchcts_cases.suites import all_hand_cases


def known_ops() -> list[str]:
    """Every op name a manifest may use: OpInfo segments and names, hand-written
    checks, and the generated per-overload cases' ops (`_lazy_clone`,
    `add.out`), which OPS entries select like any other."""
    names: set[str] = set()
    for segment, entry in index.shard(index.OPS_SHARD).items():
        names.add(segment)
        names.add(str(entry.get("name", segment)))
    names.update(c.name for c in all_hand_cases().values())
    names.update(spec.op for spec, _ in overload_cases())
    return sorted(names)


def check_manifest(path: Path | str) -> tuple[Manifest, list[str]]:
    """Validate `path` fully; returns the manifest and warnings, raises ManifestError."""
    manifest = load_manifest(path)
    ops = known_ops()
    where = manifest.path
    for op in manifest.ops_include:
        _check_name(op, "OPS.include", ops, where)
    for op in manifest.ops_exclude:
        _check_name(op, "OPS.exclude", ops, where)
    for op in manifest.tolerances.get("ops", {}):
        _check_name(op, "TOLERANCES.ops", ops, where)
    for dtype, support in manifest.dtypes.items():
        if isinstance(support, str):
            rx = re.compile(support)
            if not any(rx.fullmatch(o) for o in ops):
                raise ManifestError(
                    where,
                    f"DTYPES[{dtype!r}]: regex {support!r} matches no op name "
                    f"(it must match a whole name, e.g. 'add|mul|nn\\\\.functional\\\\..*')",
                )
    warnings = []
    if manifest.template:
        warnings.append(
            "TEMPLATE = True: this is an unedited template; edit it for your backend "
            "and delete the TEMPLATE line"
        )
    return manifest, warnings


def _check_name(name: str, key: str, ops: list[str], where: Path) -> None:
    if any(ch in name for ch in "*?["):
        if not any(fnmatch.fnmatchcase(o, name) for o in ops):
            raise ManifestError(where, f"{key}: glob {name!r} matches no op")
        return
    if name in ops:
        return
    close = difflib.get_close_matches(name, ops, n=5, cutoff=0.6)
    hint = f" (closest: {', '.join(close)})" if close else ""
    raise ManifestError(where, f"{key}: unknown op {name!r}{hint}")
