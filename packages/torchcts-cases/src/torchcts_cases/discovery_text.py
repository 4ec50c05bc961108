"""Dtype discovery, step 4: the proposal as a manifest, a markdown page and JSON.

The proposed manifest is the user's own file with its ``DTYPES`` and ``OPS``
assignments (and the comment block right above each) replaced by the discovered ones,
so every other key and comment survives. Each entry carries its sample counts and the
command that confirms it. Every op name written here passed `discovery_evidence`'s
name check and every string is a JSON-escaped or checked raw literal, so a
crafted artifact cannot put code into the file; the result is checked by the schema's
own reader before anyone sees it.
"""

from __future__ import annotations

import ast
import json
import shlex
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchcts_schema import (
    DISCOVERY_FORMAT,
    DISCOVERY_VERSION,
    Manifest,
    ManifestError,
    Status,
    read_manifest_source,
    validate_manifest,
)

from torchcts_cases.discovery_decide import DtypeDecision, OpExclusion, Proposal
from torchcts_cases.discovery_evidence import COUNT_LEGEND, EXECUTED, Cell

FORMAT = DISCOVERY_FORMAT
VERSION = DISCOVERY_VERSION
MAX_NAMED = 12  # ops named inline before a count is shown instead
COMMENT_WIDTH = 86
CONFIRM_LEVEL = 4  # every op family and backward: the probe's scope, as a run sees it


@dataclass(frozen=True)
class Commands:
    """How printed commands start and which manifests they name (relative paths)."""

    runner: str  # "bin/torchcts-run" in a checkout, else "torchcts-run"
    proposed: str  # the proposed manifest, as --out names it
    probe: str  # the probe manifest in the discovery dir
    op_globs: tuple[str, ...]  # the probe's --op filters
    dtypes: tuple[str, ...]  # the probe's --dtype filters
    level: int  # the manifest's level
    probe_results: str = ""  # the discovery dir: a confirm run of the probe lands there
    # the backend's environment the probe ran with (TORCHCTS_<DEVICE>_*), as
    # NAME=value words a shell takes before the command
    environment: tuple[tuple[str, str], ...] = ()

    def confirm_claim(self, dtype: str) -> str:
        """A run of the proposed manifest over the probed ops in `dtype`."""
        words = ["--manifest", self.proposed, "--dtype", dtype]
        words += ["--level", str(max(self.level, CONFIRM_LEVEL))]
        for glob in self.op_globs:
            words += ["--op", glob]
        return self._command(words)

    def confirm_unsupported(self, op: str, dtypes: Sequence[str]) -> str:
        """The probe again for one op: its samples show the evidence."""
        words = ["--manifest", self.probe]
        if self.probe_results:
            words += ["--results", self.probe_results]
        words += ["--op", op]
        for dtype in dtypes:
            words += ["--dtype", dtype]
        return self._command(words)

    def strings(self) -> list[str]:
        """Every free text a command holds (checked printable before use)."""
        pairs = [text for pair in self.environment for text in pair]
        return [self.runner, self.proposed, self.probe, self.probe_results, *pairs]

    def _command(self, words: list[str]) -> str:
        env = [f"{name}={shlex.quote(value)}" for name, value in self.environment]
        return " ".join([*env, shlex.join([self.runner, *words])])


def proposed_manifest(
    source: str,
    where: Path,
    manifest: Manifest,
    proposal: Proposal,
    cells: Mapping[tuple[str, str], Cell],
    commands: Commands,
    origin: str,
) -> str:
    """The user's manifest source with the proposed DTYPES and OPS in place."""
    given = [origin, *commands.strings(), *commands.op_globs]
    if not all(text.isprintable() for text in given):
        # a newline in a path or glob (a crafted artifact's) would end a comment
        raise ManifestError(where, "the proposal would hold unprintable text")
    blocks = {
        "DTYPES": _dtypes_block(proposal, cells, commands, origin),
        "OPS": _ops_block(manifest, proposal, cells, commands),
    }
    lines = source.splitlines()
    spans = _assignment_spans(source, where)
    for key in sorted(spans, key=lambda k: -spans[k][0]):  # bottom up: spans hold
        start, end = spans[key]
        lines[start:end] = blocks.pop(key).splitlines()
    for block in blocks.values():  # the manifest had no such assignment
        if block:
            lines += ["", *block.splitlines()]
    text = "\n".join(lines).rstrip("\n") + "\n"
    try:
        validate_manifest(read_manifest_source(text, where), where, "proposal")
    except ManifestError as exc:  # a bug here, never the user's: say so plainly
        raise ManifestError(
            where, f"the proposal is not a valid manifest ({exc.problem})"
        ) from None
    return text


def _assignment_spans(source: str, where: Path) -> dict[str, tuple[int, int]]:
    """0-based [start, end) line spans of DTYPES and OPS, with the comment block
    directly above each (it described the old value)."""
    tree = ast.parse(source, filename=str(where))
    lines = source.splitlines()
    spans: dict[str, tuple[int, int]] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("DTYPES", "OPS"):
                start = node.lineno - 1
                while start > 0 and lines[start - 1].lstrip().startswith("#"):
                    start -= 1
                spans[target.id] = (start, node.end_lineno or node.lineno)
    return spans


def _dtypes_block(
    proposal: Proposal,
    cells: Mapping[tuple[str, str], Cell],
    commands: Commands,
    origin: str,
) -> str:
    prose = (
        f"DTYPES as discovered by `torchcts-cases discover` ({origin}). Counts are "
        f"samples {COUNT_LEGEND} per variant. A dtype or op is left unclaimed only "
        "where every executed sample raised unsupported; a kernel that is wrong or "
        "crashes stays claimed (fix it, do not declare it away)."
    )
    if proposal.subset:
        prose += (
            f" Probed: the ops of --op {', '.join(commands.op_globs)}; other ops "
            "keep the manifest's claim."
        )
    out = _comment_lines(prose)
    out.append("DTYPES = {")
    proposed = proposal.proposed_dtypes()
    for decision in proposal.dtypes:
        if decision.dtype not in proposed:
            continue
        out += [f"    {line}" for line in _dtype_comment(decision, cells, commands)]
        out.append(f"    {_py(decision.dtype)}: {_literal(decision.proposed)},")
    out.append("}")
    return "\n".join(out)


def _dtype_comment(
    d: DtypeDecision, cells: Mapping[tuple[str, str], Cell], commands: Commands
) -> list[str]:
    claimed = "not claimed" if d.claimed is False else f"claimed {_literal(d.claimed)}"
    if not d.probed:
        return [f"# {d.dtype}: not probed; the manifest's value ({claimed})"]
    if not d.has_evidence:
        return [f"# {d.dtype}: probed, no sample executed; the manifest's value"]
    totals = _sum_counts([cells[(op, d.dtype)] for op in _probed_ops(d)])
    out = [
        f"# {d.dtype}: {claimed} before; {len(_probed_ops(d))} ops probed, samples "
        + "/".join(str(totals.get(s, 0)) for s in EXECUTED),
        f"#   work in every sample: {_named(d.works)}",
    ]
    for label, ops in (
        ("unsupported, no longer claimed", d.declared),
        ("unsupported, excluded in OPS", d.in_ops),
        (
            "unsupported, still claimed (a regex cannot unclaim it alone)",
            d.inexpressible,
        ),
        ("kept claimed (a kernel that is wrong or partly missing)", d.kept),
    ):
        for op in ops:
            out.append(f"#   {op}: {label}: {cells[(op, d.dtype)].counts_text()}")
            if label.startswith("unsupported, no"):
                out.append(f"#     {commands.confirm_unsupported(op, [d.dtype])}")
    if d.proposed is not False:
        out.append(f"#   confirm: {commands.confirm_claim(d.dtype)}")
    return out


def _ops_block(
    manifest: Manifest,
    proposal: Proposal,
    cells: Mapping[tuple[str, str], Cell],
    commands: Commands,
) -> str:
    kept = manifest.ops_exclude
    if not (manifest.ops_include or kept or proposal.exclusions):
        return ""
    out = _comment_lines(
        "Ops excluded on purpose (kept from the manifest, never probed), then ops "
        "`torchcts-cases discover` found unsupported in every probed dtype."
    )
    out.append("OPS = {")
    if manifest.ops_include:
        included = ", ".join(_py(glob) for glob in manifest.ops_include)
        out.append(f'    "include": [{included}],')
    out.append('    "exclude": {')
    for glob, why in kept.items():
        out.append(f"        {_py(glob)}: {_py(why)},")
    for exclusion in proposal.exclusions:
        out += [
            f"        {line}" for line in _exclusion_lines(exclusion, cells, commands)
        ]
    out += ["    },", "}"]
    return "\n".join(out)


def _exclusion_lines(
    e: OpExclusion, cells: Mapping[tuple[str, str], Cell], commands: Commands
) -> list[str]:
    out = [f"# {e.op}: {d}: {cells[(e.op, d)].counts_text()}" for d in e.dtypes]
    out.append(f"#   {commands.confirm_unsupported(e.op, list(commands.dtypes))}")
    reason = "discovered: unsupported in every probed dtype (" + ", ".join(e.dtypes)
    out.append(f"{_py(e.op)}: {_py(reason + ')')},")
    return out


def _probed_ops(d: DtypeDecision) -> list[str]:
    return sorted({*d.works, *d.kept, *d.declared, *d.in_ops, *d.inexpressible})


def _sum_counts(cells: Sequence[Cell]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for cell in cells:
        for status in Status:
            totals[status] = totals.get(status, 0) + cell.total(status)
    return totals


def _named(ops: Sequence[str]) -> str:
    if not ops:
        return "none"
    if len(ops) <= MAX_NAMED:
        return ", ".join(ops)
    return f"{len(ops)} ops ({', '.join(ops[:MAX_NAMED])}, ...)"


def _comment_lines(prose: str) -> list[str]:
    return ["# " + line for line in textwrap.wrap(prose, width=COMMENT_WIDTH)]


def _py(text: str) -> str:
    """A string literal in double quotes (JSON's escapes are Python's too)."""
    return json.dumps(text)


def _literal(value: bool | str) -> str:
    """A DTYPES value as Python: a raw string for a regex where one can hold it."""
    if isinstance(value, bool):
        return repr(value)
    raw = f'r"{value}"'
    if '"' not in value and not value.endswith("\\") and value.isprintable():
        try:
            if ast.literal_eval(raw) == value:
                return raw
        except (ValueError, SyntaxError):
            pass
    return _py(value)


__all__ = ["FORMAT", "VERSION", "Commands", "proposed_manifest"]
