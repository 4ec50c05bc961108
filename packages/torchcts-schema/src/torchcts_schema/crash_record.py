"""The crash record: the one type for ``<key>_crashes/<case>.json``.

Every path that loses a process in a case (an xdist worker, an isolation child, a
process that died before ``--resume``, a hard timeout) describes it with one
`CrashRecord`: how it ended (`CrashInfo`), the runlog tail with the case in it, the
stderr and faulthandler tails, a path-free environment, and the commands that
reproduce it. Readers (report, evidence, isolate) load the same type back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchcts_schema.errors import ArtifactError
from torchcts_schema.identity import node_id_for_case
from torchcts_schema.records import CrashInfo, JsonDict

CRASH_RECORD_FORMAT = "torchcts-crash-record"
CRASH_RECORD_VERSION = 1
ENVIRONMENT_KEYS = (
    "os",
    "python",
    "torch_version",
    "torchcts_version",
    "backend",
    "hardware_key",
    "device",
)


@dataclass(frozen=True)
class CrashRecord:
    """One crash, timeout or hang of one case, with its evidence."""

    case_id: str
    crash: CrashInfo
    node_id: str = ""
    run_key: str = ""
    runlog_tail: list[str] = field(default_factory=list)
    stderr_tail: str | None = None
    stdout_tail: str | None = None
    traceback: str | None = None
    environment: JsonDict = field(default_factory=dict)
    repro_command: list[str] = field(default_factory=list)
    repro_script: str | None = None
    isolation: str | None = None
    extra: JsonDict = field(default_factory=dict)  # keys beyond the contract's

    def to_dict(self) -> JsonDict:
        """The file's JSON form (every contract key present, extras kept)."""
        env = {k: self.environment.get(k) for k in ENVIRONMENT_KEYS}
        return {
            "format": CRASH_RECORD_FORMAT,
            "version": CRASH_RECORD_VERSION,
            "case_id": self.case_id,
            "node_id": self.node_id or node_id_for_case(self.case_id),
            "run_key": self.run_key,
            "crash": self.crash.to_dict(),
            "runlog_tail": list(self.runlog_tail),
            "stderr_tail": self.stderr_tail,
            "stdout_tail": self.stdout_tail,
            "traceback": self.traceback,
            "environment": {**env, **self.environment},
            "repro_command": list(self.repro_command),
            "repro_script": self.repro_script,
            "isolation": self.isolation,
            **{k: v for k, v in self.extra.items() if k not in _KNOWN},
        }

    @classmethod
    def from_dict(cls, data: Any, run_key: str | None = None) -> CrashRecord:
        """Check a crash record (or a payload about to become one); a problem is an
        `ArtifactError` naming the case and the key."""
        if not isinstance(data, dict):
            raise ArtifactError(None, "crash record must be a JSON object")
        case_id = data.get("case_id")
        if not isinstance(case_id, str) or not case_id:
            raise ArtifactError(None, "crash record lacks 'case_id'")
        crash = data.get("crash")
        if isinstance(crash, CrashInfo):
            crash = crash.to_dict()
        if not isinstance(crash, dict):
            raise ArtifactError(
                None, f"crash record of {case_id}: 'crash' must be a dict"
            )
        try:
            info = CrashInfo.from_dict(crash)
        except ArtifactError as exc:
            raise ArtifactError(
                None, f"crash record of {case_id}: {exc.problem}"
            ) from None
        lists: dict[str, list[str]] = {}
        for key in ("runlog_tail", "repro_command"):
            value = data.get(key)
            if value is None:
                value = []
            if not isinstance(value, list | tuple):
                raise ArtifactError(
                    None, f"crash record of {case_id}: '{key}' must be a list"
                )
            lists[key] = [str(v) for v in value]
        env = data.get("environment")
        env = {} if env is None else env
        if not isinstance(env, dict):
            raise ArtifactError(
                None, f"crash record of {case_id}: 'environment' must be a dict"
            )
        return cls(
            case_id=case_id,
            crash=info,
            node_id=str(data.get("node_id") or node_id_for_case(case_id)),
            run_key=run_key if run_key is not None else str(data.get("run_key") or ""),
            runlog_tail=lists["runlog_tail"],
            stderr_tail=_text(data.get("stderr_tail")),
            stdout_tail=_text(data.get("stdout_tail")),
            traceback=_text(data.get("traceback")),
            environment=dict(env),
            repro_command=lists["repro_command"],
            repro_script=_text(data.get("repro_script")),
            isolation=_text(data.get("isolation")),
            extra={k: v for k, v in data.items() if k not in _KNOWN},
        )


_TEXT_KEYS = ("stderr_tail", "stdout_tail", "traceback", "repro_script", "isolation")
_KNOWN = frozenset(
    {
        "format",
        "version",
        "case_id",
        "node_id",
        "run_key",
        "crash",
        "runlog_tail",
        "environment",
        "repro_command",
        *_TEXT_KEYS,
    }
)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


__all__ = [
    "CRASH_RECORD_FORMAT",
    "CRASH_RECORD_VERSION",
    "ENVIRONMENT_KEYS",
    "CrashRecord",
]
