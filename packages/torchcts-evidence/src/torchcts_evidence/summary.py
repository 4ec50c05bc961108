"""The text a reviewer reads after `verify`: who ran what, how it ended, what to open."""

from __future__ import annotations

from collections import Counter

from torchcts_schema import STATUS_MEANINGS, Status

from torchcts_evidence.verify import Verification

MAX_LISTED = 10


def format_verification(result: Verification) -> str:
    """``REJECTED`` with every problem, or ``OK`` with a summary of the run."""
    if not result.ok:
        lines = [f"REJECTED {result.archive.name}: {len(result.problems)} problem(s)"]
        lines += [f"  - {problem}" for problem in result.problems]
        return "\n".join(lines)
    body = result.submission
    count = len(body["files"]) + 1  # and SUBMISSION.json itself
    lines = [f"OK {result.archive.name}: {count} files, hashes match"]
    for label, key in (
        ("backend", "backend"),
        ("device", "device"),
        ("hardware key", "hardware_key"),
        ("OS", "os"),
        ("Python", "python"),
        ("PyTorch", "torch_version"),
        ("TorchCTS", "torchcts_version"),
        ("manifest", "manifest_digest"),
        ("command", "command"),
        ("completed normally", "completed_normally"),
        ("ended at", "ended_at"),
    ):
        lines.append(f"  {label:<19} {body.get(key)}")
    artifact = result.artifact
    if artifact is None:
        return "\n".join(lines)
    counts = Counter(r.status for r in artifact.records)
    lines.append("  statuses:")
    for status in Status:
        lines.append(
            f"    {status.value:<12} {counts.get(status, 0):>7}  {STATUS_MEANINGS[status]}"
        )
    reasons = Counter(
        r.not_run_reason.value for r in artifact.not_run if r.not_run_reason
    )
    if reasons:
        lines.append(
            "  not_run reasons: "
            + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        )
    crashed = [r for r in artifact.results if r.status is Status.CRASHED]
    for record in crashed[:MAX_LISTED]:
        how = record.crash.signal or record.crash.kind.value if record.crash else "?"
        lines.append(f"  crashed: {record.case_id} ({how})")
    if len(crashed) > MAX_LISTED:
        lines.append(f"  ... and {len(crashed) - MAX_LISTED} more crashed")
    if body.get("scrubbed"):
        lines.append(f"  host identity scrubbed from {len(body['scrubbed'])} file(s)")
    return "\n".join(lines)
