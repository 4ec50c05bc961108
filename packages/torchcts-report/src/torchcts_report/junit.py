"""JUnit XML with one test case per TorchCTS case, so CI systems show results natively.

failed maps to <failure>; error, unsupported and crashed map to <error> with their
details; not_run and skipped map to <skipped> with the reason. The document is built
with the standard library's ElementTree, which escapes markup; every string is first
cleaned of characters XML 1.0 cannot hold (NUL, other controls, lone surrogates,
U+FFFE/U+FFFF become U+FFFD), which ElementTree would write as they are, so the file
always parses.

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
A suite appears only when it lists or counts at least one case.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
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
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>'
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
_STATUS_REASON = attrgetter("status", "not_run_reason")
_SUITE_REASON = attrgetter("suite", "not_run_reason")
_CASE_ID = attrgetter("case_id")
_SKIPS = frozenset({Status.NOT_RUN, Status.SKIPPED})


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
    root = ET.Element(
        "testsuites", {"name": clean("torchcts " + report.run_key), **_totals(listed)}
    )
    cases = _Cases(meta)
    identity = _identity(meta)
    for suite in sorted(suites.keys() | unlisted.keys()):
        listed_here = sorted(suites.get(suite, []), key=_CASE_ID)
        left_out = unlisted.get(suite, Counter())
        if not listed_here and not sum(left_out.values()):
            continue  # nothing listed and nothing counted: an empty suite says nothing
        element = ET.SubElement(
            root, "testsuite", {"name": clean(suite), **_totals(listed_here)}
        )
        _properties(element, identity, left_out)
        for record in listed_here:
            cases.add(element, record)
        if left_out:
            ET.SubElement(element, "system-out").text = _unlisted_line(left_out)
    ET.indent(root, space="  ")
    return f"{XML_DECLARATION}\n{ET.tostring(root, encoding='unicode')}\n"


def _unlisted_line(left_out: Counter[str]) -> str:
    reasons = ", ".join(f"{k} {left_out[k]}" for k in sorted(left_out))
    return (
        f"{sum(left_out.values())} not_run case(s) counted, not listed ({reasons}): "
        "left out by the manifest's declarations or the run's selection, not by a "
        "problem of one case; the unlisted_not_run.* properties count them and "
        "torchcts-report render --junit-all lists them."
    )


def _totals(records: list[CaseRecord]) -> dict[str, str]:
    counts = Counter(r.status for r in records)
    errors = counts[Status.ERROR] + counts[Status.UNSUPPORTED] + counts[Status.CRASHED]
    return {
        "tests": str(len(records)),
        "failures": str(counts[Status.FAILED]),
        "errors": str(errors),
        "skipped": str(counts[Status.NOT_RUN] + counts[Status.SKIPPED]),
        "time": f"{sum(r.duration_s or 0.0 for r in records):.3f}",
    }


def _identity(meta: RunMetadata) -> list[tuple[str, str]]:
    """The run's identity properties, cleaned once for every suite."""
    pairs = [
        ("backend", meta.backend),
        ("device", meta.device),
        ("hardware_key", meta.hardware_key),
        ("torch_version", meta.torch_version),
        ("torchcts_version", meta.torchcts_version),
        ("manifest_digest", meta.manifest_digest),
        ("completed_normally", str(meta.completed_normally).lower()),
    ]
    return [(name, clean(value)) for name, value in pairs]


def _properties(
    suite: ET.Element, identity: list[tuple[str, str]], unlisted: Counter[str]
) -> None:
    props = ET.SubElement(suite, "properties")
    counts = [(f"unlisted_not_run.{k}", str(unlisted[k])) for k in sorted(unlisted)]
    for name, value in (*identity, *counts):
        ET.SubElement(props, "property", {"name": name, "value": value})


class _Cases:
    """Test case elements; parts many cases share (class name, skip) are built once."""

    def __init__(self, meta: RunMetadata) -> None:
        self.meta = meta
        self._classnames: dict[tuple[str, str], str] = {}
        # one <skipped> element per distinct reason, appended to every case it fits:
        # a --junit-all level-1 run has ~325,000 skips sharing a few dozen messages,
        # and ElementTree serializes a shared child like any other (same depth, same
        # indentation), so the document is unchanged and a third faster to build
        self._skips: dict[
            tuple[Status, NotRunReason | None, str | None], ET.Element
        ] = {}

    def add(self, suite: ET.Element, record: CaseRecord) -> None:
        """Append one <testcase> element to `suite`."""
        names = (record.suite, record.op)
        classname = self._classnames.get(names)
        if classname is None:
            classname = clean(f"torchcts.{record.suite}.{record.op}")
            self._classnames[names] = classname
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": classname,
                "name": clean(record.case_id),
                "time": f"{record.duration_s or 0.0:.3f}",
            },
        )
        status = record.status
        if status is Status.PASSED:
            return
        if status in _SKIPS:
            case.append(self._skip(record))
            return
        tag = "failure" if status is Status.FAILED else "error"
        kind, message = _problem(record)
        outcome = ET.SubElement(
            case,
            tag,
            {"type": clean(kind), "message": one_line(message, MESSAGE_LIMIT)},
        )
        outcome.text = truncate(clean(_body(self.meta, record, message)), BODY_LIMIT)

    def _skip(self, record: CaseRecord) -> ET.Element:
        key = (record.status, record.not_run_reason, record.detail)
        skip = self._skips.get(key)
        if skip is None:
            message = one_line(_skip_reason(record), MESSAGE_LIMIT)
            skip = self._skips[key] = ET.Element("skipped", {"message": message})
        return skip


def _body(meta: RunMetadata, record: CaseRecord, message: str) -> str:
    crash = record.crash
    lines = (
        f"status: {record.status.value}",
        message,
        record.detail or "",
        f"crash evidence: {crash.evidence}" if crash and crash.evidence else "",
        f"rerun: {rerun_command(meta, record.case_id)}",
    )
    return "\n".join(line for line in lines if line)


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
