"""Every claim ``SUBMISSION.json`` makes about the run, checked against the run itself.

The summary a reviewer reads comes from ``SUBMISSION.json``; a crafted one could claim
another OS, Python, command or hardware than the run it carries. Each claim is compared
with the loaded artifact's own metadata (or what it counts), and a difference is one
problem naming the field and both values.
"""

from __future__ import annotations

from typing import Any

from torchcts_schema import RunArtifact

from torchcts_evidence.collect import NOT_EXECUTED
from torchcts_evidence.submission_schema import SUBMISSION_NAME

# fields SUBMISSION.json copies from the run metadata under the same name
METADATA_CLAIMS = (
    "backend",
    "device",
    "hardware_key",
    "run_key",
    "os",
    "python",
    "torch_version",
    "torchcts_version",
    "manifest_digest",
    "command",
    "completed_normally",
    "started_at",
    "ended_at",
)


def claim_problems(
    body: dict[str, Any], artifact: RunArtifact, result: str
) -> list[str]:
    """One line per claim that differs from the run in `result`."""
    meta = artifact.metadata
    actual: dict[str, Any] = {key: getattr(meta, key) for key in METADATA_CLAIMS}
    counts: dict[str, int] = {}
    for record in artifact.records:
        counts[record.status.value] = counts.get(record.status.value, 0) + 1
    actual["counts"] = dict(sorted(counts.items()))
    actual["executed_cases"] = sum(
        1 for r in artifact.results if r.status not in NOT_EXECUTED
    )
    problems = []
    for key, mine in actual.items():
        claimed = body.get(key)
        if claimed != mine or type(claimed) is not type(mine):
            problems.append(
                f"{SUBMISSION_NAME}: {key} {claimed!r} differs from the run's {mine!r} "
                f"in {result}"
            )
    return problems
