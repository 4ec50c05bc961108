"""What a reviewer reads after `verify`: who ran what, how it ended, what to open.

One summary, two forms: `verification_json` (``verify --json``) and
`format_verification` (the terminal text). Every value comes from the archive, so the
text form passes each line through `for_terminal`: a crafted claim cannot move the
cursor or retitle the window.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from torchcts_schema import STATUS_MEANINGS, Status, for_terminal

from torchcts_evidence.verify import Verification

MAX_LISTED = 10
CLAIMS = (
    ("backend", "backend"),
    ("device", "device"),
    ("hardware key", "hardware_key"),
    ("run key", "run_key"),
    ("OS", "os"),
    ("Python", "python"),
    ("PyTorch", "torch_version"),
    ("TorchCTS", "torchcts_version"),
    ("manifest", "manifest_digest"),
    ("command", "command"),
    ("completed normally", "completed_normally"),
    ("ended at", "ended_at"),
)


def verification_summary(result: Verification) -> dict[str, Any] | None:
    """The accepted run as plain JSON data; None when the archive was rejected."""
    if not result.ok:
        return None
    body = result.submission
    summary: dict[str, Any] = {key: body.get(key) for _label, key in CLAIMS}
    summary["files"] = len(body["files"]) + 1  # and SUBMISSION.json itself
    summary["scrubbed_files"] = len(body.get("scrubbed") or [])
    # reason -> how many files (the names are in SUBMISSION.json)
    summary["left_out"] = {
        reason: len(names) for reason, names in (body.get("left_out") or {}).items()
    }
    artifact = result.artifact
    if artifact is None:
        return summary
    counts = Counter(r.status for r in artifact.records)
    summary["statuses"] = {s.value: counts.get(s, 0) for s in Status}
    reasons = Counter(
        r.not_run_reason.value for r in artifact.not_run if r.not_run_reason
    )
    summary["not_run_reasons"] = dict(sorted(reasons.items()))
    summary["crashed"] = [
        {
            "case_id": r.case_id,
            "how": (r.crash.signal or r.crash.kind.value) if r.crash else None,
        }
        for r in artifact.results
        if r.status is Status.CRASHED
    ]
    return summary


def verification_json(result: Verification) -> dict[str, Any]:
    """``{archive, accepted, problems, notes, summary}``, what ``verify --json``
    prints."""
    return {
        "archive": result.archive.name,
        "accepted": result.ok,
        "problems": list(result.problems),
        "notes": list(result.notes),
        "summary": verification_summary(result),
    }


def format_verification(result: Verification) -> str:
    """``REJECTED`` with every problem, or ``OK`` with a summary of the run."""
    summary = verification_summary(result)
    if summary is None:
        lines = [f"REJECTED {result.archive.name}: {len(result.problems)} problem(s)"]
        lines += [f"  - {problem}" for problem in result.problems]
        lines += [f"  note: {note}" for note in result.notes]
        return _safe(lines)
    lines = [f"OK {result.archive.name}: {summary['files']} files, hashes match"]
    lines += [f"  {label:<19} {summary[key]}" for label, key in CLAIMS]
    if "statuses" in summary:
        lines.append("  statuses:")
        for status in Status:
            count = summary["statuses"][status.value]
            lines.append(
                f"    {status.value:<12} {count:>7}  {STATUS_MEANINGS[status]}"
            )
        reasons = summary["not_run_reasons"]
        if reasons:
            lines.append(
                "  not_run reasons: "
                + ", ".join(f"{k} {v}" for k, v in reasons.items())
            )
        crashed = summary["crashed"]
        for entry in crashed[:MAX_LISTED]:
            lines.append(f"  crashed: {entry['case_id']} ({entry['how'] or '?'})")
        if len(crashed) > MAX_LISTED:
            lines.append(f"  ... and {len(crashed) - MAX_LISTED} more crashed")
    if summary["scrubbed_files"]:
        lines.append(
            f"  host identity scrubbed from {summary['scrubbed_files']} file(s)"
        )
    for reason, count in summary["left_out"].items():
        lines.append(f"  left out: {count} file(s): {reason}")
    lines += [f"  note: {note}" for note in result.notes]
    return _safe(lines)


def _safe(lines: list[str]) -> str:
    # one archive value per line: an embedded newline must not forge another line
    return "\n".join(for_terminal(line, keep_newlines=False) for line in lines)
