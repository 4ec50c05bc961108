"""Known-segfault candidate packets, built from the runner's crash records.

A packet holds what the results page asks a submitter to send (backend, hardware key,
OS, versions, exact command, node id or surface, signal or exit code, runlog tail, the
latest artifact, a standalone repro) plus a proposed ledger rule the maintainer reviews
and then accepts with ``--accept``. Everything is scrubbed of host identity.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts_schema import (
    CRASHES_SUFFIX,
    ENVIRONMENT_KEYS,
    ArtifactError,
    CaseRecord,
    HostIdentity,
    ResultsLayout,
    RunArtifact,
    case_id_for_node,
    encode_artifact,
    glob_every_key,
    latest_path,
    load_result,
    node_id_for_case,
    resolve_reference,
    scrub_text,
    slug,
    split_case_id,
    write_atomic,
)

from torchcts_evidence.errors import EvidenceError

PACKET_FORMAT = "torchcts-crash-candidate"
PACKET_VERSION = 1
RUNLOG_TAIL_LINES = 32
_RECORD_TYPES: dict[str, type] = {
    "case_id": str,
    "node_id": str,
    "crash": dict,
    "environment": dict,
    "runlog_tail": list,
    "stderr_tail": str,
    "traceback": str,
    "repro_script": str,
    "repro_command": list,
}
_FUTURE = re.compile(r"^from __future__ import .*$", re.MULTILINE)


def find_crash_record(
    results_dir: Path, case: str, run_key: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The run key and crash record of `case` (a case id or a pytest node id)."""
    case_id = case_id_for_node(case) or case
    matches: list[tuple[str, dict[str, Any]]] = []
    if run_key:
        paths = ResultsLayout(results_dir, run_key).glob("crashes")
    else:
        paths = glob_every_key(results_dir, "crashes")
    for path in paths:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvidenceError(f"{path}: unreadable crash record ({exc})") from None
        if not isinstance(record, dict):
            raise EvidenceError(f"{path}: crash record is not a JSON object")
        for key, kind in _RECORD_TYPES.items():
            if record.get(key) is not None and not isinstance(record[key], kind):
                raise EvidenceError(
                    f"{path}: crash record key {key!r} is not a {kind.__name__}"
                )
        if case_id in (
            record.get("case_id"),
            case_id_for_node(str(record.get("node_id"))),
        ):
            key = path.parent.name.removesuffix(CRASHES_SUFFIX)
            matches.append((key, record))
    if not matches:
        raise EvidenceError(
            f"{results_dir}: no crash record for {case_id!r} in *{CRASHES_SUFFIX}/; "
            "only a case that crashed (signal, timeout, hang) has one"
        )
    if len(matches) > 1:
        keys = ", ".join(k for k, _ in matches)
        raise EvidenceError(
            f"{case_id!r} crashed in several runs ({keys}); pass --run-key"
        )
    return matches[0]


@dataclass(frozen=True)
class Candidate:
    """A packet and the latest result artifact that travels beside it (scrubbed)."""

    packet: dict[str, Any]
    artifact_text: str | None


def build_packet(
    results_dir: Path, case: str, identity: HostIdentity, run_key: str | None = None
) -> Candidate:
    """The candidate packet for `case`, scrubbed, with a proposed rule to review."""
    key, record = find_crash_record(results_dir, case, run_key)
    case_id = str(record["case_id"])
    env = record.get("environment") or {}
    crash = record.get("crash") or {}
    artifact_text: str | None = None
    case_record: CaseRecord | None = None
    command = ""
    try:
        artifact = load_result(results_dir, run_key=key)
    except (ArtifactError, TypeError, ValueError, AttributeError, KeyError):
        artifact = None  # the packet still carries the crash record itself
    if artifact is not None:
        artifact_text = _artifact_text(results_dir, key, artifact)
        command = artifact.metadata.command
        case_record = next((r for r in artifact.records if r.case_id == case_id), None)
        env = {
            **_env_from(artifact.metadata.to_dict()),
            **{k: v for k, v in env.items() if v is not None},
        }
    surfaces = case_record.extra.get("surfaces") if case_record else None
    runlog = record.get("runlog_tail") or []
    script = record.get("repro_script")
    packet: dict[str, Any] = {
        "format": PACKET_FORMAT,
        "format_version": PACKET_VERSION,
        "case_id": case_id,
        "node_id": record.get("node_id"),
        "surfaces": surfaces if isinstance(surfaces, list) else [],
        "run_key": key,
        "backend": env.get("backend"),
        "device": env.get("device"),
        "hardware_key": env.get("hardware_key"),
        "os": env.get("os"),
        "python": env.get("python"),
        "torch_version": env.get("torch_version"),
        "torchcts_version": env.get("torchcts_version"),
        "command": command,
        "repro_command": _join(record.get("repro_command")),
        "crash": crash,
        "runlog_tail": [str(line) for line in runlog][-RUNLOG_TAIL_LINES:],
        "stderr_tail": record.get("stderr_tail"),
        "traceback": record.get("traceback"),
        "case_record": case_record.to_dict() if case_record else None,
        "run_metadata": artifact.metadata.to_dict() if artifact else None,
        "latest_artifact": None,  # the file name, once written beside the packet
        "repro_script": wrap_repro(script, case_id, env, crash) if script else None,
        "proposed_rule": _proposed_rule(case_id, env, crash),
    }
    clean = json.loads(scrub_text(json.dumps(packet), identity))
    text = scrub_text(artifact_text, identity) if artifact_text is not None else None
    return Candidate(clean, text)


def write_packet(candidate: Candidate, out_dir: Path) -> list[Path]:
    """``crash-candidate-<case>.json``, its ``.py`` repro and ``.artifact.json``
    (those two when there is one); returns the files written, packet first."""
    packet = dict(candidate.packet)
    stem = "crash-candidate-" + slug(packet["case_id"])
    written = [out_dir / f"{stem}.json"]
    if packet.get("repro_script"):
        repro = out_dir / f"{stem}.py"
        packet["proposed_rule"] = {**packet["proposed_rule"], "repro": repro.name}
        # a lone surrogate (a crafted record, a backend's message) has no UTF-8 form;
        # as a Python escape it stays the same string in the script's literals
        script = packet["repro_script"].encode("utf-8", "backslashreplace")
        _write_shared(repro, script)
        written.append(repro)
    if candidate.artifact_text is not None:
        artifact = out_dir / f"{stem}.artifact.json"
        packet["latest_artifact"] = artifact.name
        _write_shared(artifact, candidate.artifact_text)
        written.append(artifact)
    _write_shared(written[0], json.dumps(packet, indent=1, sort_keys=True) + "\n")
    return written


def _write_shared(path: Path, text: str | bytes) -> None:
    # atomic writes start as private temp files (0600); these are meant to be sent
    write_atomic(path, text)
    os.chmod(path, 0o644)


def _artifact_text(results_dir: Path, key: str, artifact: RunArtifact) -> str:
    """The canonical artifact's own text when the latest file names one, else the
    artifact the loader rebuilt (an interrupted run), encoded the same way."""
    latest = latest_path(results_dir, key)
    if latest.exists():
        target = resolve_reference(latest)
        if target != latest:
            return target.read_text(encoding="utf-8")
    return encode_artifact(artifact)


def wrap_repro(
    script: str, case_id: str, env: dict[str, Any], crash: dict[str, Any]
) -> str:
    """The runner's repro source, made a self-describing script that runs alone."""
    futures = _FUTURE.findall(script)
    body = _FUTURE.sub("", script).strip("\n")
    expected = crash.get("signal") or crash.get("kind") or "a crash"
    header = [
        "#!/usr/bin/env python3",
        f'"""Known-crash candidate repro: {case_id}',
        "",
        f"Backend {env.get('backend')} on {env.get('hardware_key')}, PyTorch "
        f"{env.get('torch_version')}. Expected: {expected}.",
        "Imports torch and the backend only, never TorchCTS. Run it with a Python that",
        "has both: python <this file> (bin/python <this file> at the root of a TorchCTS",
        "checkout, whose plain python may have no torch).",
        "Exit status 0 means the crash did not reproduce here.",
        '"""',
        *futures,
        "import faulthandler",
        "",
        "faulthandler.enable()  # a native crash still prints where it happened",
        "",
        "# ---- repro from the TorchCTS crash record ----",
    ]
    footer = [
        "# ---- end of repro ----",
        'print("torchcts repro: finished without crashing")',
    ]
    return "\n".join([*header, body, *footer]) + "\n"


def _proposed_rule(
    case_id: str, env: dict[str, Any], crash: dict[str, Any]
) -> dict[str, Any]:
    try:
        _suite, _op, _variant, dtype, _sample = split_case_id(case_id)
    except ValueError:
        dtype = None
    signal = crash.get("signal") or crash.get("kind") or "unknown"
    backend = str(env.get("backend") or env.get("device") or "unknown")
    constraints: dict[str, Any] = {"torch": torch_family(env.get("torch_version"))}
    if dtype:
        constraints["dtype"] = dtype
    if env.get("hardware_key"):
        constraints["hardware_key"] = env["hardware_key"]
    return {
        "id": slug(f"{backend}-{case_id}-{signal}"),
        "backend": backend,
        "match": {"node_id": node_id_for_case(case_id)},
        "constraints": constraints,
        "expected_signal": signal,
        "reason": "",
        "owner": "",
        "repro": "",
        "review_after": "",
    }


def torch_family(version: Any) -> str | None:
    """``2.13.0+cpu`` -> ``>=2.13,<2.14``: rules match a minor release family."""
    found = re.match(r"(\d+)\.(\d+)", str(version or ""))
    if not found:
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    return f">={major}.{minor},<{major}.{minor + 1}"


def _env_from(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ENVIRONMENT_KEYS}


def _join(argv: Any) -> str | None:
    if isinstance(argv, list):
        return shlex.join(str(a) for a in argv)
    return str(argv) if argv else None
