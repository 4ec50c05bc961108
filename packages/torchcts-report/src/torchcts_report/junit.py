"""JUnit XML with one test case per TorchCTS case, so CI systems show results natively.

failed maps to <failure>; error, unsupported and crashed map to <error> with their
details; not_run and skipped map to <skipped> with the reason. Every string is cleaned
of characters XML 1.0 cannot hold before it is escaped, so the file always parses.

A test case is something CI shows and a person acts on one by one. Every executed case
is listed. A not_run case is listed when its reason is an action on that case, and
counted per reason (suite properties ``unlisted_not_run.<reason>`` and a summary line
in the suite's <system-out>) when it is a configuration fact repeated over thousands:

- dtype_not_supported, counted: the manifest's DTYPES choice for a whole op; ~51,000
  skips in a level-1 run say nothing one count per reason does not.
- capability_not_declared, counted: one manifest-wide declaration, the same for every
  case that needs the capability.
- level_filtered, counted: the run's own level selection, not a fact about a case.
- filtered_by_selection, counted: the run's own command-line filters.
- sample_limit, counted: the manifest's MAX_SAMPLES_PER_OP cut, configuration.
- op_excluded, counted: the manifest excludes a named op with a reason, a
  configuration decision the scorecard lists by reason.
- device_count, counted: the manifest's DEVICE_COUNT, the same for every such case.
- reference_unavailable, listed: this case's CPU reference could not be built, a
  harness problem to fix case by case.
- known_crash_not_executed, listed: a known crash of this case went unexecuted; its
  evidence is still to be collected.
- comparison_not_valid, counted: PyTorch's OpInfo says the op cannot be compared
  across devices; ~1,100 skips in a level-1 run outnumbered the passes on CI
  dashboards, and the scorecard's missing-evidence section lists them.

A not_run record without a reason is listed. ``render --junit-all`` lists everything.
"""

from __future__ import annotations

from collections import Counter
from itertools import compress
from operator import attrgetter, not_

from torchcts_schema import (
    NOT_RUN_MEANINGS,
    CaseRecord,
    NotRunReason,
    RunMetadata,
    Status,
)

from torchcts_report.clusters import rerun_command
from torchcts_report.inputs import ReportInput
from torchcts_report.text import clean, one_line, truncate

MESSAGE_LIMIT = 500
BODY_LIMIT = 20_000
# not_run reasons counted per suite instead of listed (see the module docstring)
COUNTED_REASONS: frozenset[NotRunReason] = frozenset(
    {
        NotRunReason.DTYPE_NOT_SUPPORTED,
        NotRunReason.CAPABILITY_NOT_DECLARED,
        NotRunReason.LEVEL_FILTERED,
        NotRunReason.FILTERED_BY_SELECTION,
        NotRunReason.SAMPLE_LIMIT,
        NotRunReason.OP_EXCLUDED,
        NotRunReason.DEVICE_COUNT,
        NotRunReason.COMPARISON_NOT_VALID,
    }
)
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
_STATUS_REASON = attrgetter("status", "not_run_reason")
_SUITE_REASON = attrgetter("suite", "not_run_reason")
_CASE_ID = attrgetter("case_id")


def attr(value: object) -> str:
    """A quoted XML attribute value."""
    return '"' + clean(value).translate(_ATTR) + '"'


def text(value: object) -> str:
    """XML character data."""
    return clean(value).translate(_TEXT)


def render_junit(report: ReportInput, *, list_all: bool = False) -> str:
    """The JUnit XML document as text.

    not_run cases with a reason in `COUNTED_REASONS` are counted per suite and reason
    instead of listed; `list_all` lists them too.
    """
    meta = report.artifact.metadata
    records = report.artifact.records
    counted = frozenset[NotRunReason]() if list_all else COUNTED_REASONS
    # partitioned in C: a level-1 run has ~325,000 records, nearly all of them counted
    keys = frozenset((Status.NOT_RUN, reason) for reason in counted)
    flags = list(map(keys.__contains__, map(_STATUS_REASON, records)))
    unlisted: dict[str, Counter[str]] = {}
    for (suite, reason), count in Counter(
        map(_SUITE_REASON, compress(records, flags))
    ).items():
        unlisted.setdefault(suite, Counter())[reason.value] += count
    suites: dict[str, list[CaseRecord]] = {}
    for record in compress(records, map(not_, flags)):
        suites.setdefault(record.suite, []).append(record)
    listed = [r for members in suites.values() for r in members]
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites name={attr('torchcts ' + report.run_key)}{_totals(listed)}>",
    ]
    cases = _Cases(meta)
    for suite in sorted(suites.keys() | unlisted.keys()):
        listed_here = sorted(suites.get(suite, []), key=_CASE_ID)
        left_out = unlisted.get(suite, Counter())
        if not listed_here and not sum(left_out.values()):
            continue  # nothing listed and nothing counted: an empty suite says nothing
        lines.append(f"  <testsuite name={attr(suite)}{_totals(listed_here)}>")
        lines.append(_properties(meta, left_out))
        lines.extend(map(cases.testcase, listed_here))
        if left_out:
            lines.append(
                f"    <system-out>{text(_unlisted_line(left_out))}</system-out>"
            )
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _unlisted_line(left_out: Counter[str]) -> str:
    reasons = ", ".join(f"{k} {left_out[k]}" for k in sorted(left_out))
    return (
        f"{sum(left_out.values())} not_run case(s) counted, not listed ({reasons}): "
        "left out by the manifest's declarations or the run's selection, not by a "
        "problem of one case; the unlisted_not_run.* properties count them and "
        "torchcts-report render --junit-all lists them."
    )


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


class _Cases:
    """Test case elements; parts many cases share (class name, skip) are built once."""

    def __init__(self, meta: RunMetadata) -> None:
        self.meta = meta
        self._classnames: dict[tuple[str, str], str] = {}
        self._skips: dict[tuple[Status, NotRunReason | None, str | None], str] = {}

    def testcase(self, record: CaseRecord) -> str:
        """One <testcase> element."""
        names = (record.suite, record.op)
        classname = self._classnames.get(names)
        if classname is None:
            classname = attr(f"torchcts.{record.suite}.{record.op}")
            self._classnames[names] = classname
        time = f"{record.duration_s or 0.0:.3f}"  # digits only: nothing to escape
        head = (
            f"    <testcase classname={classname} "
            f'name={attr(record.case_id)} time="{time}"'
        )
        outcome = self._outcome(record)
        if outcome is None:
            return head + "/>"
        return f"{head}>\n      {outcome}\n    </testcase>"

    def _outcome(self, record: CaseRecord) -> str | None:
        detail = record.detail
        if record.status not in _SKIPS or not (detail is None or type(detail) is str):
            return _outcome(self.meta, record)
        key = (record.status, record.not_run_reason, detail)
        skip = self._skips.get(key)
        if skip is None:
            skip = self._skips[key] = str(_outcome(self.meta, record))
        return skip


_SKIPS = frozenset({Status.NOT_RUN, Status.SKIPPED})


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
