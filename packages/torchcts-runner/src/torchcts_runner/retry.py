"""The one isolated retry of a case whose process vanished without evidence.

SIGKILL, SIGTERM or a worker that is simply gone prove nothing about the case: a user,
a scheduler or the kernel's OOM killer may have sent them. Rather than blame the case
(an invented crash) or forget it (a lost case), the controller runs it once more in an
isolation child, where its ending is observed on its own; that ending is its record,
and the record says it is a retry.
"""

from __future__ import annotations

from dataclasses import replace

from torchcts_schema import CaseRecord, CaseSpec

from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.isolation import IsolationPolicy
from torchcts_runner.isolation_decisions import RETRY
from torchcts_runner.settings import RunSettings


def retry_isolated(
    spec: CaseSpec, settings: RunSettings, run_key: str, recorder: CrashRecorder
) -> CaseRecord:
    """Run `spec` once in a fresh isolation child from the controller."""
    case_id = spec.case_id
    s = settings
    options = {
        "isolate": "all",
        "run_key": run_key,
        "case_source": s.case_source,
        "validation": s.validation,
        "timeout_s": s.case_timeout_s,
        "worker": "retry",
        "results_dir": str(s.results_dir),
        "manifest": str(s.manifest.path),
        "device": s.device,
    }
    policy = IsolationPolicy.from_options(options)
    policy.recorder = recorder
    try:
        payload = {
            "case_id": case_id,
            "manifest": str(s.manifest.path),
            "device": s.device,
            "results_dir": str(s.results_dir),
            "options": options,
        }
        record = policy.run(spec, payload)
    finally:
        policy.close()
    note = (
        "retried isolated: its first process vanished without evidence that the case "
        "caused it"
    )
    detail = f"{note}; {record.detail}" if record.detail else note
    return replace(record, isolation=RETRY, detail=detail[:500])


__all__ = ["retry_isolated"]
