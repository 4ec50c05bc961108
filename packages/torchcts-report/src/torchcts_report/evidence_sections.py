"""Scorecard sections built from evidence: crash records, probes, diagnostics.

Crash records are listed without exception: a crash is the most important thing a
run can find, so every crashed case appears in a table, and the evidence file of each
(runlog tail, stderr tail, repro command) is shown beneath it.
"""

from __future__ import annotations

import json
from typing import Any

from torchcts_schema import (
    CHECKOUT_PREFIX,
    CRASHES_SUFFIX,
    ORACLE_FAILURES_INFIX,
    PER_PROCESS_SUFFIX,
    TOOLS,
    CaseRecord,
    Status,
)

from torchcts_report.clusters import quote
from torchcts_report.frames import backend_lines, same_text
from torchcts_report.inputs import ReportInput, probe_counts, probe_rows
from torchcts_report.summary import RecordSummary
from torchcts_report.text import clean, md, md_block, md_code, table

MAX_CRASH_DETAILS = 50
CRASH_LINES = 32  # lines of stderr or traceback shown per crash, after harness frames
MAX_REFERENCE_ROWS = 50
SHOWN_ELSEWHERE = frozenset({"probes"})  # the probe table shows it in full
PROBE_COLUMNS = ("kind", "probe", "status", "note")


def crash_section(report: ReportInput, summary: RecordSummary) -> str:
    """Every crashed case, then the detail of each crash evidence file."""
    crashed = sorted(
        (r for r in summary.executed if r.status is Status.CRASHED),
        key=lambda r: r.case_id,
    )
    evidence = sorted(report.crash_evidence, key=lambda e: str(e.get("_file")))
    parts = ["## Crash records", ""]
    if not crashed and not evidence:
        parts.append("No case crashed.")
        return "\n".join(parts)
    by_case = {str(e.get("case_id")): e for e in evidence}
    if crashed:
        parts.append(f"{len(crashed)} case(s) crashed.")
        parts.append("")
        parts.append(
            table(
                ["case", "kind", "signal / exit code", "detail", "evidence"],
                [_crash_row(r, by_case.get(r.case_id)) for r in crashed],
            )
        )
    known = {r.case_id for r in crashed}
    orphans = [e for e in evidence if str(e.get("case_id")) not in known]
    if orphans:
        parts += [
            "",
            f"{len(orphans)} crash record file(s) name a case the artifact "
            "does not record as crashed (an interrupted run, or a case rerun "
            "since):",
            "",
        ]
        parts.extend(
            f"- {md_code(e.get('_file'))}: case {md_code(e.get('case_id'))}"
            for e in orphans
        )
    for index, record in enumerate(evidence):
        if index == MAX_CRASH_DETAILS:
            parts += [
                "",
                f"Details of {len(evidence) - MAX_CRASH_DETAILS} more crash "
                f"record(s) are in {md_code(report.run_key + CRASHES_SUFFIX + '/')}.",
            ]
            break
        parts += ["", _crash_detail(record)]
    return "\n".join(parts)


def _crash_row(record: CaseRecord, evidence: dict[str, Any] | None) -> list[str]:
    crash = record.crash
    if crash is None:
        return [
            md_code(record.case_id),
            "(not recorded)",
            "",
            md(record.detail or ""),
            md_code(evidence["_file"]) if evidence else "none",
        ]
    how = crash.signal or ("" if crash.exit_code is None else f"exit {crash.exit_code}")
    where = crash.evidence or (evidence["_file"] if evidence else None)
    return [
        md_code(record.case_id),
        md(crash.kind.value),
        md(how),
        md(crash.detail or record.detail or "", 200),
        md_code(where) if where else "none",
    ]


def _is_tool(word: str) -> bool:
    return word.removeprefix(CHECKOUT_PREFIX) in TOOLS


def _crash_detail(record: dict[str, Any]) -> str:
    lines = [f"### Crash of {md_code(record.get('case_id'))}", ""]
    lines.append(f"- record: {md_code(record.get('_file'))}")
    crash = record.get("crash")
    if isinstance(crash, dict):
        summary = ", ".join(
            f"{k} {crash[k]}" for k in ("kind", "signal", "exit_code") if crash.get(k)
        )
        lines.append(f"- ended by: {md(summary or 'unknown')}")
    repro = record.get("repro_command")
    # a crafted record could hold any command: only a TorchCTS tool's is printed
    if isinstance(repro, list) and repro and _is_tool(str(repro[0])):
        words = [str(repro[0]), *(quote(str(a)) for a in repro[1:])]
        lines.append(f"- rerun: {md_code(' '.join(words), 600)}")
    env = record.get("environment")
    if isinstance(env, dict) and env:
        pairs = ", ".join(f"{k}={env[k]}" for k in sorted(env))
        lines.append(f"- environment: {md(pairs, 400)}")
    if record.get("repro_script"):
        lines.append("- a standalone repro script is in the record (`repro_script`)")
    runlog = _text_of(record.get("runlog_tail"))
    if runlog:
        lines += ["", "Runlog tail:", "", md_block(runlog, max_lines=32)]
    stderr = _text_of(record.get("stderr_tail"))
    trace = _text_of(record.get("traceback"))
    if stderr and trace and same_text(stderr, trace):
        # one holds the other: showing both would print the same frames twice
        longer = stderr if len(stderr) >= len(trace) else trace
        blocks = [("Stderr tail and traceback (the same text, shown once)", longer)]
    else:
        blocks = [("Stderr tail", stderr), ("Traceback", trace)]
    for title, value in blocks:
        if value:
            shown = backend_lines(value, CRASH_LINES)
            lines += ["", f"{title}:", "", md_block(shown, max_lines=CRASH_LINES + 2)]
    return "\n".join(lines)


def _text_of(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def probe_section(report: ReportInput) -> str:
    """The probe table: pass/fail/total counts, then the rows the run recorded."""
    parts = ["## Diagnostic probes", ""]
    counts = probe_counts(report)
    if counts:
        parts.append(", ".join(f"{md(k)}: {counts[k]}" for k in sorted(counts)))
    else:
        parts.append("The run recorded no probe counts.")
    rows = probe_rows(report)
    parts.append("")
    if rows:
        parts.append(
            table(
                list(PROBE_COLUMNS),
                [[md(row.get(c, ""), 400) for c in PROBE_COLUMNS] for row in rows],
            )
        )
    else:
        parts.append("No probe rows or probe failure records were found.")
    parts += ["", "Probe failures are diagnostic: they never change what runs."]
    return "\n".join(parts)


def reference_section(report: ReportInput) -> str:
    """Cases whose CPU reference could not be built: never backend results."""
    rows = sorted(
        report.oracle_failures,
        key=lambda r: (
            clean(r.get("case_id", "")),
            json.dumps(r, sort_keys=True, default=str),
        ),
    )
    parts = ["## Reference diagnostics", ""]
    if not rows:
        parts.append("No oracle failure records were found.")
        return "\n".join(parts)
    parts.append(
        f"{len(rows)} case(s) had no valid CPU reference. These explain reference "
        "construction problems; they are never backend passes, failures or skips."
    )
    parts.append("")
    parts.append(
        table(
            ["case", "exception", "message"],
            [
                [
                    md_code(r.get("case_id", "")),
                    md(r.get("exception_type", "")),
                    md(r.get("message", ""), 200),
                ]
                for r in rows[:MAX_REFERENCE_ROWS]
            ],
        )
    )
    if len(rows) > MAX_REFERENCE_ROWS:
        pattern = report.run_key + ORACLE_FAILURES_INFIX + "*" + PER_PROCESS_SUFFIX
        parts += [
            "",
            f"{len(rows) - MAX_REFERENCE_ROWS} more are in the "
            f"{md_code(pattern)} files.",
        ]
    return "\n".join(parts)


def diagnostics_section(report: ReportInput) -> str:
    """Run-level diagnostics and any evidence file that could not be read."""
    parts = ["## Diagnostics", ""]
    diagnostics = report.artifact.diagnostics
    shown = [k for k in sorted(diagnostics) if k not in SHOWN_ELSEWHERE]
    if shown:
        parts.extend(
            f"- {md_code(k)}: {md_code(json.dumps(diagnostics[k], sort_keys=True, default=str), 300)}"
            for k in shown
        )
    else:
        parts.append("The artifact holds no other run-level diagnostics.")
    if report.unreadable:
        parts += ["", "Evidence files that could not be read:", ""]
        parts.extend(
            f"- {md_code(name)}: {md(problem)}"
            for name, problem in sorted(report.unreadable)
        )
    return "\n".join(parts)
