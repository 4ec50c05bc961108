"""The markdown scorecard: one human report rendered from one resolved artifact.

It is a summary, never a replacement for the artifact, so every number in it is
computed from the artifact's records and every list says when it was cut short. It
holds nothing that changes between renders (no render time), so the same artifact
always gives the same bytes.
"""

from __future__ import annotations

from datetime import datetime

from torchcts_schema import (
    EXPECTED_SOURCE_MEANINGS,
    NEXT_FIX_MEANINGS,
    NOT_RUN_MEANINGS,
    STATUS_MEANINGS,
    NotRunReason,
    RunMetadata,
    Status,
)

from torchcts_report.clusters import (
    build_clusters,
    example_message,
    outside_list_command,
    rerun_command,
)
from torchcts_report.discovery_section import discovery_section
from torchcts_report.evidence_sections import (
    crash_section,
    diagnostics_section,
    probe_section,
    reference_section,
)
from torchcts_report.fallback_section import fallback_passes, fallback_section
from torchcts_report.inputs import ReportInput, failing_probes
from torchcts_report.summary import (
    RecordSummary,
    capability_label,
    dtype_of,
    group_tally,
    level_of,
    not_run_reasons,
    source_of,
    status_totals,
    summarise,
)
from torchcts_report.tallies import STATUSES, TallyRow, numeric_order
from torchcts_report.text import md, md_code, table
from torchcts_report.tolerance_section import tolerance_section
from torchcts_report.triage import Action, triage_of

MAX_CLUSTERS = 100


def render_markdown(report: ReportInput, summary: RecordSummary | None = None) -> str:
    """The whole scorecard as markdown text ending in one newline.

    `summary` is `summarise(report.artifact.records)`, when the caller already has it.
    """
    sections = markdown_sections(report, summary)
    return "\n\n".join(text for _, text in sections) + "\n"


def markdown_sections(
    report: ReportInput, summary: RecordSummary | None = None
) -> list[tuple[str, str]]:
    """The scorecard's sections in order, named so the HTML can add to them."""
    meta = report.artifact.metadata
    if summary is None:
        summary = summarise(report.artifact.records)
    return [
        ("title", f"# TorchCTS scorecard: {md_code(report.run_key)}"),
        *(("partial", text) for text in _partial_banner(report)),
        ("status", _status_section(report, summary)),
        ("next_fix", _next_fix_section(report, summary)),
        ("run", _header(meta)),
        ("probes", probe_section(report)),
        ("clusters", _cluster_section(report, summary)),
        ("crashes", crash_section(report, summary)),
        ("reference", reference_section(report)),
        *(
            ("tolerances", text)
            for text in [tolerance_section(report.artifact.results)]
            if text
        ),
        *(
            ("cpu_fallback", text)
            for text in [fallback_section(report.artifact.results)]
            if text
        ),
        ("breakdown", _breakdown_sections(summary)),
        *(("discovery", text) for text in [discovery_section(report)] if text),
        ("not_run", _not_run_section(summary)),
        ("diagnostics", diagnostics_section(report)),
    ]


def _partial_banner(report: ReportInput) -> list[str]:
    meta = report.artifact.metadata
    if meta.completed_normally:
        return []
    n = len(report.artifact.records)
    text = (
        "> **Partial run: this run did not complete normally** (interrupted, killed, "
        f"or still running). This report shows the {n} case record(s) it has; a "
        "case without a record is missing, not passed."
    )
    if report.artifact.diagnostics.get("journal_truncated_tail"):
        text += "\n> The journal ended in a half-written line, which was left out."
    return [text]


def _header(meta: RunMetadata) -> str:
    rows = [
        ("backend", md(meta.backend)),
        ("device", md(meta.device)),
        ("hardware key", md_code(meta.hardware_key)),
        ("PyTorch", md(meta.torch_version)),
        ("TorchCTS", md(meta.torchcts_version)),
        ("OS", md(meta.os)),
        ("Python", md(meta.python)),
        ("semantic level", md(meta.level if meta.level is not None else "manifest")),
        ("manifest digest", md_code(meta.manifest_digest)),
        ("command", md_code(meta.command, 600)),
        ("started", md(meta.started_at)),
        ("ended", md(meta.ended_at or "not recorded")),
        ("duration", md(duration_text(meta))),
        ("completed normally", "yes" if meta.completed_normally else "**no**"),
    ]
    if meta.resumes:
        rows.append(("resumed", md(f"{meta.resumes} time(s) with --resume")))
    if meta.interrupted_by:
        rows.append(("interrupted by", md(meta.interrupted_by)))
    return "## Run\n\n" + table(["", ""], [[k, v] for k, v in rows])


def duration_text(meta: RunMetadata) -> str:
    """Time spent running (over every resumed attempt, when the runner counted it),
    else wall time from the recorded start and end, or why it is unknown."""
    if meta.active_s is not None:
        return _clock(float(meta.active_s)) + (
            " spent running (interruptions not counted)" if meta.resumes else ""
        )
    if not meta.ended_at:
        return "unknown (no end time recorded)"
    try:
        start = datetime.fromisoformat(meta.started_at)
        end = datetime.fromisoformat(meta.ended_at)
        seconds = (end - start).total_seconds()
    except (ValueError, TypeError):
        return "unknown (unreadable start or end time)"
    return _clock(seconds)


def _clock(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{seconds:.1f}s"


def _status_section(report: ReportInput, summary: RecordSummary) -> str:
    counts = status_totals(summary)
    rows = [[f"`{s.value}`", str(counts[s]), md(STATUS_MEANINGS[s])] for s in STATUSES]
    rows.append(["**total**", str(sum(counts.values())), ""])
    text = "## Status counts\n\n" + table(["status", "cases", "meaning"], rows)
    via = fallback_passes(report.artifact.results)
    if via:
        text += (
            f"\n\n**{via} of the {counts[Status.PASSED]} passed case(s) passed only "
            f"through the device's CPU fallback**; {counts[Status.PASSED] - via} "
            "passed natively (see CPU fallback)."
        )
    recorded = report.artifact.metadata.counts
    computed = {s.value: n for s, n in counts.items()}
    if recorded and {k: v for k, v in recorded.items() if v} != {
        k: v for k, v in computed.items() if v
    }:
        listed = ", ".join(f"{k} {recorded[k]}" for k in sorted(recorded))
        text += (
            f"\n\nThe run metadata states other counts ({md(listed)}); the counts "
            "above are computed from the records, which are the source of truth."
        )
    outside = report.artifact.metadata.outside
    if outside:
        listed = ", ".join(f"{md(k)} {outside[k]:,}" for k in sorted(outside))
        text += (
            f"\n\n{sum(outside.values()):,} more case(s) lie outside this run's level "
            f"and filters: counted by reason, not recorded ({listed}). Their ids: "
            + "; ".join(
                f"`{outside_list_command(report.artifact.metadata, k, base=report.command_base)}`"
                for k in sorted(outside)
            )
            + "."
        )
    return text


def _next_fix_section(report: ReportInput, summary: RecordSummary) -> str:
    parts = [
        "## Next fix",
        "",
        "In the order to work through them: each category invalidates or hides the "
        "ones after it. Rerun commands run from the directory that holds the "
        "results directory.",
    ]
    triage = triage_of(
        summary,
        report.artifact.metadata,
        failing_probes(report),
        base=report.command_base,
    )
    for number, item in enumerate(triage, start=1):
        extra = ""
        if item.probe_failures:
            extra = f" and {item.probe_failures} probe failure(s)"
        title = item.category.value.replace("_", " ")
        parts += ["", f"### {number}. {title}: {item.count} case(s){extra}", ""]
        parts.append(md(NEXT_FIX_MEANINGS[item.category]))
        if item.actions:
            parts.append("")
        parts.extend(_action_line(action) for action in item.shown)
        if item.rest:
            parts += [
                "",
                f"{len(item.rest)} more action(s) in this category:",
                "",
                _rest_table(item.rest),
            ]
    return "\n".join(parts)


def _action_line(action: Action) -> str:
    line = f"- {md(action.summary, 400)}"
    if action.example:
        line += f" Example: {md_code(action.example)}."
    if action.command:
        line += f" Rerun: {md_code(action.command, 600)}"
    return line


def _rest_table(actions: tuple[Action, ...]) -> str:
    rows = [
        [
            "probe" if action.probe else str(action.count),
            md(action.summary, 300),
            md_code(action.example) if action.example else "",
            md_code(action.command, 600) if action.command else "",
        ]
        for action in actions
    ]
    return table(["cases", "action", "example", "rerun"], rows)


def _cluster_section(report: ReportInput, summary: RecordSummary) -> str:
    clusters = build_clusters(summary.executed)  # not_run cases never fail
    parts = [
        "## Failure clusters",
        "",
        "Crashed, failed, error and unsupported cases grouped by op family, error "
        "signature (numbers, addresses and paths removed) and dtype, largest first; "
        "the message is the example case's own, as recorded.",
        "",
    ]
    if not clusters:
        parts.append("No failing cases.")
        return "\n".join(parts)
    by_id = {r.case_id: r for r in summary.executed}
    meta, base = report.artifact.metadata, report.command_base
    rows = [
        [
            str(index),
            str(c.size),
            f"`{c.status.value}`",
            md_code(c.family),
            md_code(c.dtype),
            md(example_message(by_id[c.example])),
            md_code(c.example),
            md_code(
                rerun_command(
                    meta, c.example, base=base, isolate=c.status is Status.CRASHED
                ),
                600,
            ),
        ]
        for index, c in enumerate(clusters[:MAX_CLUSTERS], start=1)
    ]
    headers = [
        "#",
        "cases",
        "status",
        "op family",
        "dtype",
        "example message",
        "example",
        "rerun",
    ]
    parts.append(table(headers, rows))
    rest = clusters[MAX_CLUSTERS:]
    if rest:
        parts += [
            "",
            f"{len(rest)} smaller cluster(s) with {sum(c.size for c in rest)} "
            "case(s) are not listed here; the artifact and the JUnit XML hold "
            "every case.",
        ]
    return "\n".join(parts)


def _breakdown_sections(summary: RecordSummary) -> str:
    sources = group_tally(summary, source_of)
    parts = ["## Counts by expected-result source", "", _tally_table("source", sources)]
    meanings = [f"- `{s.value}`: {md(m)}" for s, m in EXPECTED_SOURCE_MEANINGS.items()]
    parts += ["", *meanings]
    for title, label_of, sort_key in (
        ("capability", capability_label, None),
        ("dtype", dtype_of, None),
        ("semantic level", level_of, numeric_order),
    ):
        rows = group_tally(summary, label_of, sort_key=sort_key)
        parts += ["", f"## Counts by {title}", "", _tally_table(title, rows)]
    return "\n".join(parts)


def _tally_table(title: str, rows: list[TallyRow]) -> str:
    if not rows:
        return "No cases."
    headers = [title, *(s.value for s in STATUSES), "total"]
    body = [[md_code(r.label), *(str(n) for n in r.counts), str(r.total)] for r in rows]
    return table(headers, body)


def _not_run_section(summary: RecordSummary) -> str:
    counts = not_run_reasons(summary)
    parts = ["## Not run, by reason", ""]
    if not counts:
        parts.append("Every selected case was executed.")
        return "\n".join(parts)
    meanings = {r.value: m for r, m in NOT_RUN_MEANINGS.items()}
    order = [r.value for r in NotRunReason]
    keys = sorted(
        counts, key=lambda k: (order.index(k) if k in order else len(order), k)
    )
    rows = [[f"`{k}`", str(counts[k]), md(meanings.get(k, ""))] for k in keys]
    parts.append(table(["reason", "cases", "meaning"], rows))
    return "\n".join(parts)
