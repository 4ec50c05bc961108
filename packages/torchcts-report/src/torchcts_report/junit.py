"""JUnit XML with one test case per TorchCTS case, so CI systems show results natively.

failed maps to <failure>; error, unsupported and crashed map to <error> with their
details; not_run and skipped map to <skipped> with the reason. The document is written
as text, element by element, exactly as the standard library's ElementTree writes the
same tree after ``ElementTree.indent(tree, space="  ")`` (a test re-serializes it with
ElementTree and compares): a level-4 run lists 105,000 test cases, and building and
serializing ElementTree's tree of them was a quarter of the report's CPU. Markup is
escaped as ElementTree escapes it; every string is first cleaned of characters XML 1.0
cannot hold (NUL, other controls, lone surrogates, U+FFFE/U+FFFF become U+FFFD), which
ElementTree would write as they are, so the file always parses.

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
    root = _start("testsuites", {"name": clean("torchcts " + report.run_key)})
    root += _attributes(_totals(listed))
    parts: list[str] = []
    cases = _Cases(meta)
    identity = _identity(meta)
    for suite in sorted(suites.keys() | unlisted.keys()):
        listed_here = sorted(suites.get(suite, []), key=_CASE_ID)
        left_out = unlisted.get(suite, Counter())
        if not listed_here and not sum(left_out.values()):
            continue  # nothing listed and nothing counted: an empty suite says nothing
        head = _start("testsuite", {"name": clean(suite)}) + _attributes(
            _totals(listed_here)
        )
        parts.append(f"{_INDENT[1]}{head}>")
        parts.append(_properties(identity, left_out))
        parts.extend(map(cases.text, listed_here))
        if left_out:
            line = _escape_text(_unlisted_line(left_out))
            parts.append(f"{_INDENT[2]}<system-out>{line}</system-out>")
        parts.append(f"{_INDENT[1]}</testsuite>")
    body = f"{root}>{''.join(parts)}\n</testsuites>" if parts else f"{root} />"
    return f"{XML_DECLARATION}\n{body}\n"


# ElementTree's spelling: attributes in order, ` />` for an empty element, and the
# line breaks and two-space indents `ElementTree.indent` gives each depth
_INDENT = tuple("\n" + "  " * depth for depth in range(4))


def _escape_text(text: str) -> str:
    """Character data escaped as ElementTree escapes it."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _escape_attribute(text: str) -> str:
    """An attribute value escaped as ElementTree escapes it (line breaks and tabs as
    character references, so they survive a parser's attribute normalization)."""
    text = _escape_text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    if "\n" in text:
        text = text.replace("\n", "&#10;")
    if "\t" in text:
        text = text.replace("\t", "&#09;")
    return text


def _attributes(values: dict[str, str]) -> str:
    return "".join(f' {k}="{_escape_attribute(v)}"' for k, v in values.items())


def _start(tag: str, values: dict[str, str]) -> str:
    """``<tag a="..."``: the start tag, left open for ``>`` or `` />``."""
    return f"<{tag}{_attributes(values)}"


def _unlisted_line(left_out: Counter[str]) -> str:
    reasons = ", ".join(f"{k} {left_out[k]}" for k in sorted(left_out))
    return (
        f"{sum(left_out.values())} not_run case(s) counted, not listed ({reasons}): "
        "left out by the manifest's declarations, the run's selection or PyTorch's "
        "own verdict that an op cannot be compared across devices, not by a "
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


def _properties(identity: list[tuple[str, str]], unlisted: Counter[str]) -> str:
    counts = [(f"unlisted_not_run.{k}", str(unlisted[k])) for k in sorted(unlisted)]
    rows = "".join(
        f"{_INDENT[3]}{_start('property', {'name': name, 'value': value})} />"
        for name, value in (*identity, *counts)
    )
    return f"{_INDENT[2]}<properties>{rows}{_INDENT[2]}</properties>"


class _Cases:
    """Test case elements as text; parts many cases share (class name, skip) are
    made once."""

    def __init__(self, meta: RunMetadata) -> None:
        self.meta = meta
        self._classnames: dict[tuple[str, str], str] = {}
        # one <skipped> element per distinct reason: a --junit-all level-1 run has
        # ~325,000 skips sharing a few dozen messages
        self._skips: dict[tuple[Status, NotRunReason | None, str | None], str] = {}

    def text(self, record: CaseRecord) -> str:
        """One <testcase> element, on its own line at its depth."""
        names = (record.suite, record.op)
        classname = self._classnames.get(names)
        if classname is None:
            attribute = _escape_attribute(clean(f"torchcts.{record.suite}.{record.op}"))
            classname = self._classnames[names] = (
                f'{_INDENT[2]}<testcase classname="{attribute}"'
            )
        name = _escape_attribute(clean(record.case_id))
        head = f'{classname} name="{name}" time="{record.duration_s or 0.0:.3f}"'
        status = record.status
        if status is Status.PASSED:
            return f"{head} />"
        if status in _SKIPS:
            child = self._skip(record)
        else:
            tag = "failure" if status is Status.FAILED else "error"
            kind, message = _problem(record)
            values = {"type": clean(kind), "message": one_line(message, MESSAGE_LIMIT)}
            body = truncate(clean(_body(self.meta, record, message)), BODY_LIMIT)
            child = f"{_start(tag, values)}>{_escape_text(body)}</{tag}>"
        return f"{head}>{_INDENT[3]}{child}{_INDENT[2]}</testcase>"

    def _skip(self, record: CaseRecord) -> str:
        key = (record.status, record.not_run_reason, record.detail)
        skip = self._skips.get(key)
        if skip is None:
            message = one_line(_skip_reason(record), MESSAGE_LIMIT)
            skip = self._skips[key] = f"{_start('skipped', {'message': message})} />"
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
