"""Dtype discovery: claimed against discovered support, as markdown and as JSON.

Written beside the probe's results (``discovery.md``, ``discovery.json``) so the
evidence and its reading stay together; the markdown's first table is what a reader
wants: per dtype, what the manifest claims, what the probe supports, and the counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from torchcts_schema import DISCOVERY_JSON, DISCOVERY_MARKDOWN

from torchcts_cases.discovery_decide import DtypeDecision, Proposal, Support
from torchcts_cases.discovery_evidence import COUNT_LEGEND, EXECUTED, Cell, Verdict
from torchcts_cases.discovery_text import FORMAT, VERSION, Commands

MARKDOWN_NAME = DISCOVERY_MARKDOWN
JSON_NAME = DISCOVERY_JSON
TITLE = "Claimed vs discovered dtype support"


def markdown(
    proposal: Proposal,
    cells: Mapping[tuple[str, str], Cell],
    commands: Commands,
    origin: str,
) -> str:
    """The page: one row per dtype, then one row per op that is not clean."""
    out = [
        f"# {TITLE}",
        "",
        f"Probe: {origin}. Samples are counted {COUNT_LEGEND}.",
        "",
        "| dtype | claimed | discovered | ops probed | work | unsupported | "
        "kept claimed | samples |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for d in proposal.dtypes:
        if not (d.has_evidence or d.claimed is not False):
            continue
        probed = _probed(d)
        totals = [sum(cells[(op, d.dtype)].total(s) for op in probed) for s in EXECUTED]
        unsupported = len(d.declared) + len(d.in_ops) + len(d.inexpressible)
        out.append(
            f"| {d.dtype} | {_cell(d.claimed)} | "
            f"{_cell(d.proposed) if d.probed else 'not probed'} | {len(probed)} | "
            f"{len(d.works)} | {unsupported} | {len(d.kept)} | "
            f"{'/'.join(map(str, totals)) if probed else '-'} |"
        )
    rows = [
        cell
        for key, cell in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        if cell.verdict is not Verdict.WORKS
    ]
    out += ["", "## Ops that are not clean", ""]
    if not rows:
        out.append("Every probed op passed every sample in every probed dtype.")
    else:
        out += [
            "| op | dtype | verdict | samples per variant | proposal | confirm |",
            "|---|---|---|---|---|---|",
        ]
        decisions = {d.dtype: d for d in proposal.dtypes}
        for cell in rows:
            where = _placement(cell, decisions[cell.dtype])
            confirm = commands.confirm_unsupported(cell.op, [cell.dtype])
            out.append(
                f"| {cell.op} | {cell.dtype} | {cell.verdict.value} | "
                f"{cell.counts_text()} | {where} | `{confirm}` |"
            )
    if proposal.exclusions:
        out += ["", "## Proposed OPS exclusions", ""]
        for e in proposal.exclusions:
            out.append(
                f"- `{e.op}`: unsupported in every probed dtype ({', '.join(e.dtypes)})"
            )
    return "\n".join(out) + "\n"


def _probed(d: DtypeDecision) -> list[str]:
    return sorted({*d.works, *d.kept, *d.declared, *d.in_ops, *d.inexpressible})


def _placement(cell: Cell, d: DtypeDecision) -> str:
    if cell.op in d.declared:
        return "no longer claimed in DTYPES"
    if cell.op in d.in_ops:
        return "OPS.exclude"
    if cell.op in d.inexpressible:
        return "still claimed (cannot be unclaimed alone)"
    if cell.verdict is Verdict.UNTESTED:
        return "no evidence"
    return "kept claimed: fix the kernel"


def _cell(value: Support) -> str:
    text = value if isinstance(value, str) else str(value)
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def document(
    proposal: Proposal,
    cells: Mapping[tuple[str, str], Cell],
    *,
    origin: str,
    results: str,
    probe: str,
    proposal_text: str,
) -> dict[str, Any]:
    """The JSON form: every dtype decision, every OPS exclusion, every cell."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "origin": origin,
        "results": results,
        "probe_manifest": probe,
        "subset": proposal.subset,
        "dtypes": [_decision(d) for d in proposal.dtypes],
        "ops_exclude": [
            {"op": e.op, "dtypes": list(e.dtypes)} for e in proposal.exclusions
        ],
        "cells": [
            {
                "op": c.op,
                "dtype": c.dtype,
                "verdict": c.verdict.value,
                "counts": {v: dict(per) for v, per in c.counts.items()},
            }
            for c in cells.values()
        ],
        "proposal": proposal_text,
    }


def _decision(d: DtypeDecision) -> dict[str, Any]:
    return {
        "dtype": d.dtype,
        "claimed": d.claimed,
        "proposed": d.proposed,
        "probed": d.probed,
        "works": list(d.works),
        "kept": list(d.kept),
        "declared": list(d.declared),
        "in_ops": list(d.in_ops),
        "inexpressible": list(d.inexpressible),
        "untested": list(d.untested),
    }


def json_text(doc: Mapping[str, Any]) -> str:
    """Stable JSON (sorted keys), one trailing newline."""
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


__all__ = ["JSON_NAME", "MARKDOWN_NAME", "TITLE", "document", "json_text", "markdown"]
