"""JUnit XML with one test case per TorchCTS case, so CI systems show results natively.

failed maps to <failure>; error, unsupported and crashed map to <error> with their
details; not_run and skipped map to <skipped> with the reason. Every string is cleaned
of characters XML 1.0 cannot hold before it is escaped, so the file always parses.
"""

from __future__ import annotations

from collections import Counter

from torchcts_schema import (
    NOT_RUN_MEANINGS,
    CaseRecord,
    RunMetadata,
    Status,
)

from torchcts_report.clusters import rerun_command
from torchcts_report.inputs import ReportInput
from torchcts_report.tallies import outside_selection
from torchcts_report.text import clean, one_line, truncate

MESSAGE_LIMIT = 500
BODY_LIMIT = 20_000
_ATTR = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def attr(value: object) -> str:
    """A quoted XML attribute value."""
    return '"' + clean(value).translate(_ATTR) + '"'


def text(value: object) -> str:
    """XML character data."""
    return clean(value).translate(_TEXT)


def render_junit(report: ReportInput, *, include_filtered: bool = False) -> str:
    """The JUnit XML document as text.

    Cases the run's own selection left out (command-line filters, the semantic level,
    the sample limit) are not part of the run that was asked for: a level-1 run would
    otherwise list hundreds of thousands of skips and exceed what CI systems accept.
    They are counted per reason in each suite's properties instead; `include_filtered`
    lists them too. Every not_run the backend's manifest causes is listed case by case.
    """
    meta = report.artifact.metadata
    suites: dict[str, list[CaseRecord]] = {}
    unlisted: dict[str, Counter[str]] = {}
    for record in report.artifact.records:
        if not include_filtered and outside_selection(record):
            reason = record.not_run_reason.value if record.not_run_reason else ""
            unlisted.setdefault(record.suite, Counter())[reason] += 1
            continue
        suites.setdefault(record.suite, []).append(record)
    listed = [r for records in suites.values() for r in records]
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites name={attr('torchcts ' + report.run_key)}{_totals(listed)}>",
    ]
    for suite in sorted(suites.keys() | unlisted.keys()):
        records = sorted(suites.get(suite, []), key=lambda r: r.case_id)
        lines.append(f"  <testsuite name={attr(suite)}{_totals(records)}>")
        lines.append(_properties(meta, unlisted.get(suite, Counter())))
        lines.extend(_testcase(meta, r) for r in records)
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _totals(records: list[CaseRecord]) -> str:
    counts = Counter(r.status for r in records)
    failures = counts[Status.FAILED]
    errors = counts[Status.ERROR] + counts[Status.UNSUPPORTED] + counts[Status.CRASHED]
    skipped = counts[Status.NOT_RUN] + counts[Status.SKIPPED]
    time = sum(r.duration_s or 0.0 for r in records)
    return (
        f' tests="{len(records)}" failures="{failures}" errors="{errors}" '
        f'skipped="{skipped}" time="{time:.3f}"'
    )


def _properties(meta: RunMetadata, unlisted: Counter[str]) -> str:
    pairs = [
        ("backend", meta.backend),
        ("device", meta.device),
        ("hardware_key", meta.hardware_key),
        ("torch_version", meta.torch_version),
        ("torchcts_version", meta.torchcts_version),
        ("manifest_digest", meta.manifest_digest),
        ("completed_normally", str(meta.completed_normally).lower()),
        *((f"unlisted_not_run.{k}", str(unlisted[k])) for k in sorted(unlisted)),
    ]
    props = "".join(
        f"      <property name={attr(k)} value={attr(v)}/>\n" for k, v in pairs
    )
    return f"    <properties>\n{props}    </properties>"


def _testcase(meta: RunMetadata, record: CaseRecord) -> str:
    time = f"{record.duration_s or 0.0:.3f}"
    head = (
        f"    <testcase classname={attr(f'torchcts.{record.suite}.{record.op}')} "
        f"name={attr(record.case_id)} time={attr(time)}"
    )
    outcome = _outcome(meta, record)
    if outcome is None:
        return head + "/>"
    return f"{head}>\n      {outcome}\n    </testcase>"


def _outcome(meta: RunMetadata, record: CaseRecord) -> str | None:
    status = record.status
    if status is Status.PASSED:
        return None
    if status in (Status.NOT_RUN, Status.SKIPPED):
        return (
            f"<skipped message={attr(one_line(_skip_reason(record), MESSAGE_LIMIT))}/>"
        )
    tag = "failure" if status is Status.FAILED else "error"
    kind, message = _problem(record)
    body = "\n".join(
        line
        for line in (
            f"status: {status.value}",
            message,
            record.detail or "",
            f"crash evidence: {record.crash.evidence}"
            if record.crash and record.crash.evidence
            else "",
            f"rerun: {rerun_command(meta, record.case_id)}",
        )
        if line
    )
    return (
        f"<{tag} type={attr(kind)} message={attr(one_line(message, MESSAGE_LIMIT))}>"
        f"{text(truncate(clean(body), BODY_LIMIT))}</{tag}>"
    )


def _problem(record: CaseRecord) -> tuple[str, str]:
    if record.status is Status.CRASHED:
        crash = record.crash
        if crash is None:
            return "crashed", "crashed (no crash details recorded)"
        how = crash.signal or (
            f"exit code {crash.exit_code}" if crash.exit_code is not None else ""
        )
        detail = f": {crash.detail}" if crash.detail else ""
        return (
            f"crashed.{crash.kind.value}",
            f"crashed: {crash.kind.value} {how}{detail}",
        )
    if record.status is Status.FAILED and record.mismatch:
        return "mismatch", record.mismatch
    kind = record.exception_type or record.status.value
    message = record.exception_message or record.mismatch or record.detail or ""
    prefix = "unsupported: " if record.status is Status.UNSUPPORTED else ""
    return (
        f"unsupported.{kind}" if prefix else kind,
        f"{prefix}{record.exception_type or record.status.value}: {message}",
    )


def _skip_reason(record: CaseRecord) -> str:
    if record.status is Status.NOT_RUN:
        reason = record.not_run_reason
        if reason is None:
            return f"not_run: {record.detail or 'no reason recorded'}"
        extra = f" ({record.detail})" if record.detail else ""
        return f"not_run: {reason.value}: {NOT_RUN_MEANINGS[reason]}{extra}"
    return f"skipped: {record.detail or 'no reason recorded'}"
