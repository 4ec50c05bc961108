"""The coverage audit: every aten overload registered in the installed torch is covered
by OpInfo, covered by a hand-written suite, excluded with a reason, or unknown.

"Covered" means a case's CPU run was observed dispatching that overload (see
`coverage_trace`). Exclusions are rules with reasons; everything else is unknown and
goes to the pending-review file for a maintainer to classify.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

import torch
from torchcts_schema import COVERAGE_DIR, DTYPE_NAMES, write_atomic

from torchcts_cases import coverage_trace, index
from torchcts_cases.coverage_exclusions import device_hook, exclusion
from torchcts_cases.overload_family import FAMILIES, family
from torchcts_cases.trace_store import StoredTrace

COVERED_OPINFO = "covered_by_opinfo"
COVERED_SUITE = "covered_by_suite"
EXCLUDED = "excluded"
UNKNOWN = "unknown"
CATEGORIES = (COVERED_OPINFO, COVERED_SUITE, EXCLUDED, UNKNOWN)


def registered_overloads() -> list[str]:
    """Every aten overload registered in this torch, sorted."""
    return sorted(
        n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")
    )


def classify(
    name: str,
    trace: dict[str, dict[str, list[str]]],
    declared: Collection[str] = frozenset(),
) -> dict[str, Any]:
    """The audit row of one overload: its category, family, and whether some case
    declares it (by name, or its op's packet as OpInfo does)."""
    row = _category(name, trace)
    row["family"] = family(name)
    row["declared"] = name in declared or name.partition(".")[0] in declared
    return row


def _category(name: str, trace: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    hook = device_hook(name)
    if hook is not None:  # dispatched by its case's CPU run, but never judged there
        return {"category": EXCLUDED, "reason": hook}
    if name in trace["opinfo"]:
        return {"category": COVERED_OPINFO, "by": trace["opinfo"][name][:10]}
    if name in trace["suites"]:
        return {"category": COVERED_SUITE, "by": trace["suites"][name][:10]}
    reason = exclusion(name)
    if reason is not None:
        return {"category": EXCLUDED, "reason": reason}
    return {"category": UNKNOWN}


def audit(trace: StoredTrace | None = None) -> dict[str, dict[str, Any]]:
    """The audit of every registered overload (`trace` None: build or read it)."""
    trace = trace if trace is not None else coverage_trace.build()
    observed = coverage_trace.observed_overloads(trace)
    declared = coverage_trace.declared_overloads(trace)
    return {name: classify(name, observed, declared) for name in registered_overloads()}


def trace_facts(trace: StoredTrace) -> dict[str, Any]:
    """What the summary says about the trace behind it."""
    return {
        "cases_traced": sum(1 for _ in trace.traced()),
        "complete": trace.complete,
        "universe": trace.universe,
        "cpu_minutes": round(trace.cpu_seconds / 60, 1),
        "current": coverage_trace.is_current(trace),
    }


def summarize(
    rows: dict[str, dict[str, Any]], trace: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Counts per category, observed and declared per family, excluded per reason."""
    counts = Counter(r["category"] for r in rows.values())
    reasons = Counter(r["reason"] for r in rows.values() if r["category"] == EXCLUDED)
    families: dict[str, Counter[str]] = {f: Counter() for f in FAMILIES}
    for name, row in rows.items():
        tally = families[row.get("family") or family(name)]
        tally["overloads"] += 1
        tally[_column(row["category"])] += 1
        if row.get("declared") and row["category"] != EXCLUDED:
            tally["declared"] += 1
    total = Counter[str]()
    for tally in families.values():
        total.update(tally)
    return {
        "torch_version": torch.__version__,
        "overloads": len(rows),
        "counts": {c: counts.get(c, 0) for c in CATEGORIES},
        "by_family": {
            f: {c: t.get(c, 0) for c in FAMILY_COLUMNS}
            for f, t in [*families.items(), ("all", total)]
        },
        "excluded_by_reason": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        "trace": trace or {},
    }


FAMILY_COLUMNS = ("overloads", "excluded", "observed", "declared", "unknown")


def _column(category: str) -> str:
    if category in (COVERED_OPINFO, COVERED_SUITE):
        return "observed"
    return "excluded" if category == EXCLUDED else "unknown"


def summary_markdown(summary: dict[str, Any]) -> str:
    """The summary as small markdown tables: categories, then families."""
    total = summary["overloads"] or 1
    lines = [
        f"Coverage of the {summary['overloads']} aten overloads registered in torch "
        f"{summary['torch_version']}:",
        "",
        "| category | overloads | share |",
        "|---|---:|---:|",
    ]
    for category, n in summary["counts"].items():
        lines.append(f"| {category} | {n} | {100 * n / total:.1f}% |")
    by_family = summary.get("by_family")
    if by_family:
        lines += [
            "",
            "Observed (a case's CPU run dispatched it) and declared (a case names it "
            "or its op), of the overloads not excluded:",
            "",
            "| family | overloads | excluded | observed | declared | unknown |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, t in by_family.items():
            rest = t["overloads"] - t["excluded"]
            lines.append(
                f"| {name} | {t['overloads']} | {t['excluded']} | "
                f"{_share(t['observed'], rest)} | {_share(t['declared'], rest)} | "
                f"{_share(t['unknown'], rest)} |"
            )
    trace = summary.get("trace") or {}
    if trace:
        lines += ["", _trace_line(trace)]
    return "\n".join(lines) + "\n"


def _trace_line(trace: dict[str, Any]) -> str:
    """How much of the catalog the figures rest on (and the build's cost, if given)."""
    traced, universe = trace.get("cases_traced", 0), trace.get("universe", 0)
    of = f" of {universe:,} ({100 * traced / universe:.1f}%)" if universe else ""
    state = (
        "complete"
        if trace.get("complete")
        else "PARTIAL: cases not traced yet reach nothing here, so unknown is "
        "overstated and observed understated"
    )
    line = f"Trace: {traced:,}{of} cases, {state}"
    if "cpu_minutes" in trace:
        line += f"; {trace['cpu_minutes']} CPU-minutes to build"
    if trace.get("current") is False:
        line += "; the case catalog changed since (`coverage audit` tops it up)"
    return line + "."


def _share(n: int, of: int) -> str:
    return f"{n} ({100 * n / of:.1f}%)" if of else str(n)


def write_coverage(
    results_dir: Path,
    rows: dict[str, dict[str, Any]],
    trace: dict[str, Any] | None = None,
) -> Path:
    """Write results/coverage/: audit, pending review, generated cases, summary."""
    out = Path(results_dir) / COVERAGE_DIR
    summary = summarize(rows, trace)
    pending = sorted(n for n, r in rows.items() if r["category"] == UNKNOWN)
    files = {
        "aten_coverage_audit.json": rows,
        "pending_review.json": {
            "about": "aten overloads no case reaches and no exclusion explains; "
            "classify each (add a case, or an exclusion with a reason)",
            "overloads": pending,
        },
        "generated_cases.json": generated_cases(),
        "summary.json": summary,
    }
    for name, data in files.items():
        write_atomic(out / name, json.dumps(data, indent=1, sort_keys=True) + "\n")
    write_atomic(out / "summary.md", summary_markdown(summary))
    return out


def audit_into(results_dir: Path, trace: StoredTrace | None = None) -> dict[str, Any]:
    """Audit with `trace` (None: build or read it), write DIR/coverage/; the summary."""
    trace = trace if trace is not None else coverage_trace.build()
    rows = audit(trace)
    facts = trace_facts(trace)
    write_coverage(results_dir, rows, facts)
    return summarize(rows, facts)


def refresh(results_dir: Path) -> str:
    """After a run: DIR/coverage/ from the cached or packaged trace, never tracing
    (a cold trace is tens of CPU-minutes); one line saying what was written."""
    trace = coverage_trace.load()
    out = Path(results_dir) / COVERAGE_DIR
    if trace is None:
        note = (
            f"no coverage trace of torch {torch.__version__} and this case index yet: "
            "`bin/torchcts-cases coverage audit` builds it (resumable, cached)\n"
        )
        write_atomic(out / "summary.md", note)
        return f"coverage: {note.strip()}; {out}/"
    summary = audit_into(results_dir, trace)
    by = summary["by_family"]["all"]
    rest = by["overloads"] - by["excluded"]
    share = 100 * by["observed"] / rest if rest else 0.0
    partial = "" if trace.complete else " (partial trace)"
    return f"coverage: {share:.1f}% of {rest} overloads observed{partial}; {out}/"


def generated_cases() -> dict[str, Any]:
    """Case counts per op, dtype and variant (the compact generated-case list)."""
    from torchcts_cases.catalog import opinfo_groups
    from torchcts_cases.suites import all_hand_cases

    cached = [
        p.stem
        for p in sorted(index.index_dir().glob("*.json"))
        if p.stem in DTYPE_NAMES
    ]
    opinfo: dict[str, dict[str, dict[str, int]]] = {}
    for dtype in cached:
        for op, _entry, variant, count in opinfo_groups(dtype):
            opinfo.setdefault(op, {}).setdefault(dtype, {})[variant] = count
    for op, _entry, variant, count in opinfo_groups(None):
        opinfo.setdefault(op, {}).setdefault("-", {})[variant] = count
    return {
        "note": "OpInfo counts for the dtypes whose case index is built on this machine",
        "dtypes": cached,
        "opinfo": opinfo,
        "hand_written": sorted(all_hand_cases()),
    }
