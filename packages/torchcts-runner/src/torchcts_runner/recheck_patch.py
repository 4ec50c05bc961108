"""The patch a recheck proposes: the manifest (and project ledger) edits that remove
exactly the entries judged ``remove`` or ``narrow``.

Each verdict maps to one edit of the schema's manifest editor (`ManifestEdit`) or to
a rule removed from the project's known-crash ledger; the edited manifest must load.
Rules of the packaged ledger ship with TorchCTS: they are listed, never patched. The
files are only read here; a person applies the diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchcts_schema import (
    ManifestEdit,
    apply_edits,
    ops_regex,
    remove_rules,
    unified_patch,
)

from torchcts_runner.known_crash_match import PACKAGED
from torchcts_runner.metadata import shareable_path
from torchcts_runner.recheck_verdicts import EntryVerdict

PROPOSED = ("remove", "narrow")


@dataclass
class RecheckPatch:
    """The unified diff (empty when nothing is proposed) and what it could not say."""

    text: str = ""
    packaged_rules: list[str] = field(default_factory=list)  # to remove upstream


def manifest_edits(verdicts: Sequence[EntryVerdict]) -> list[ManifestEdit]:
    """The manifest edits of the proposed verdicts, in a stable order."""
    edits: list[ManifestEdit] = []
    regex_ops: dict[str, list[str]] = {}
    include: list[str] = []
    caps: list[str] = []
    for v in verdicts:
        if v.verdict not in PROPOSED:
            continue
        d = v.decline
        if d.kind == "ops_exclude":
            edits.append(ManifestEdit("remove_exclude", d.item))
        elif d.kind == "dtype":
            value: bool | str = True if v.verdict == "remove" else ops_regex(v.ops)
            edits.append(ManifestEdit("set_dtype", d.item, value))
        elif d.kind == "dtype_regex":
            regex_ops.setdefault(d.item, []).append(d.op)
        elif d.kind == "ops_include":
            include.append(d.op)
        elif d.kind == "capability":
            caps.append(d.item)
    for dtype, ops in sorted(regex_ops.items()):
        edits.append(ManifestEdit("extend_dtype_regex", dtype, items=tuple(ops)))
    if include:
        edits.append(ManifestEdit("add_include", items=tuple(include)))
    if caps:
        edits.append(ManifestEdit("add_capability", items=tuple(caps)))
    return edits


def build_patch(
    verdicts: Sequence[EntryVerdict],
    manifest_path: Path,
    manifest_label: str,
    rule_sources: dict[str, str],
) -> RecheckPatch:
    """The diff of the manifest and of each project ledger the verdicts edit.

    `manifest_label` names the manifest in the diff headers (its path from where the
    patch is applied); a project ledger's source is its path from the run's start.
    """
    out = RecheckPatch()
    edits = manifest_edits(verdicts)
    if edits:
        old = manifest_path.read_text(encoding="utf-8")
        new = apply_edits(old, edits, manifest_path)
        out.text += unified_patch(old, new, manifest_label)
    by_ledger: dict[str, list[str]] = {}
    for v in verdicts:
        if v.verdict in PROPOSED and v.decline.kind == "known_crash":
            source = rule_sources.get(v.decline.item, PACKAGED)
            if source == PACKAGED:
                out.packaged_rules.append(v.decline.item)
            else:
                by_ledger.setdefault(source, []).append(v.decline.item)
    for source, ids in sorted(by_ledger.items()):
        old = Path(source).read_text(encoding="utf-8")
        new = remove_rules(old, ids, source)
        out.text += unified_patch(old, new, shareable_path(source))
    return out


__all__ = ["PROPOSED", "RecheckPatch", "build_patch", "manifest_edits"]
