"""The canonical backend evidence store: ``evidence/backends/<backend>.jsonl`` + index.

`pack_run` turns one result artifact into path-free entries, one per dispatcher surface
and expected-result source, and appends them; `check_store` is what ``bin/nox -s lint``
runs. The index is always rebuilt from the JSONL files, so it can never drift silently.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shlex
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts_schema import (
    RUNTIME_MODIFICATIONS_OPTION,
    ArtifactError,
    CaseRecord,
    HostIdentity,
    RunArtifact,
    find_identity,
    load_result,
    metadata_problems,
    scrub_text,
    slug,
    write_atomic,
)

from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.store_schema import (
    ENTRY_VERSION,
    EXECUTED,
    GATE,
    INDEX_FORMAT,
    INDEX_NAME,
    INDEX_VERSION,
    LABEL,
    entry_problems,
    worst_result,
)

_FRACTION = re.compile(r"\d+/\d+")  # --shard 1/4 is not a path


@dataclass(frozen=True)
class PackOptions:
    """What the submitter says about the run that the artifact cannot."""

    backend_gate: str | None = None
    command_intent: str | None = None
    modifications: tuple[str, ...] = ()
    surfaces: tuple[str, ...] = ()  # globs; empty keeps every surface


def pack_run(
    result: Path, store: Path, options: PackOptions, identity: HostIdentity
) -> tuple[Path, int]:
    """Append `result`'s entries to the store; refuses a run that is already in it."""
    try:
        artifact = load_result(result)
    except ArtifactError as exc:
        raise EvidenceError(str(exc)) from None
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        raise EvidenceError(f"{result}: malformed result ({exc!r})") from None
    wrong = metadata_problems(artifact.metadata)
    if wrong:
        raise EvidenceError(f"{result}: malformed run metadata: {'; '.join(wrong)}")
    entries = build_entries(artifact, options, identity)
    if not entries:
        raise EvidenceError(
            f"{result}: no executed case matches; nothing to add to the evidence store"
        )
    target = store / f"{entries[0]['backend']}.jsonl"
    existing = _read_lines(target) if target.exists() else []
    if any(e.get("run") == entries[0]["run"] for e in existing):
        raise EvidenceError(f"{target}: run {entries[0]['run']} is already recorded")
    lines = [*existing, *entries]
    write_atomic(target, "".join(_line(e) for e in lines))
    write_index(store)
    return target, len(entries)


def build_entries(
    artifact: RunArtifact, options: PackOptions, identity: HostIdentity
) -> list[dict[str, Any]]:
    """Entries grouped by (surface, expected source), every field path-free."""
    meta = artifact.metadata
    gate = options.backend_gate or str(meta.options.get("backend_gate") or meta.device)
    modifications = sorted(
        {
            *options.modifications,
            *_labels(meta.options.get(RUNTIME_MODIFICATIONS_OPTION)),
            *_option_labels(meta.options),
        }
    )
    for label in modifications:
        if not LABEL.fullmatch(label):
            raise EvidenceError(
                f"modification label {label!r} is not a path-free label [A-Za-z0-9_.:=+-]"
            )
    if not GATE.fullmatch(gate):
        raise EvidenceError(f"backend gate {gate!r} must be path-free text")
    intent = options.command_intent or _intent(meta.command, identity)
    intent = scrub_text(intent, identity)
    if find_identity(intent, identity):
        raise EvidenceError(f"command intent {intent!r} holds a path or host identity")
    groups: dict[tuple[str, str | None], list[CaseRecord]] = defaultdict(list)
    for record in artifact.results:
        if record.status not in EXECUTED:
            continue
        source = record.expected_source.value if record.expected_source else None
        for surface in _surfaces(record):
            if not options.surfaces or any(
                fnmatch.fnmatchcase(surface, g) for g in options.surfaces
            ):
                groups[(surface, source)].append(record)
    # surrogatepass: a command holding a lone surrogate (a results path that is not
    # UTF-8) still names its run; valid text hashes as plain UTF-8, so the ids of runs
    # already in the store do not change
    identity_text = "\n".join(
        [meta.run_key, meta.started_at, meta.manifest_digest, meta.command]
    )
    digest = hashlib.sha256(identity_text.encode("utf-8", "surrogatepass"))
    run_id = "r-" + digest.hexdigest()[:16]
    entries = []
    for (surface, source), records in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
    ):
        counts: dict[str, int] = defaultdict(int)
        for record in records:
            counts[record.status.value] += 1
        entry = {
            "format_version": ENTRY_VERSION,
            "run": run_id,
            "date": (meta.ended_at or meta.started_at)[:10],
            "backend": slug(meta.backend),
            "device": meta.device,
            "hardware_key": slug(meta.hardware_key),
            "backend_gate": gate,
            "torch_version": meta.torch_version,
            "torchcts_version": meta.torchcts_version,
            "surface": surface,
            "expected_source": source,
            "dtypes": sorted({r.dtype for r in records if r.dtype}),
            "cases": len(records),
            "counts": dict(sorted(counts.items())),
            "result": worst_result(counts),
            "modifications": modifications,
            "command_intent": intent,
            "run_status": "completed" if meta.completed_normally else "incomplete",
        }
        problems = entry_problems(entry)
        if problems:
            raise EvidenceError(f"entry for {surface!r}: {'; '.join(problems)}")
        entries.append(entry)
    return entries


def write_index(store: Path) -> Path:
    """Rebuild ``index.json`` from the JSONL files (sorted, deterministic)."""
    index = {"format": INDEX_FORMAT, "format_version": INDEX_VERSION, "backends": {}}
    for path in sorted(store.glob("*.jsonl")):
        index["backends"][path.stem] = index_entry(path)  # type: ignore[index]
    target = store / INDEX_NAME
    write_atomic(target, json.dumps(index, indent=1, sort_keys=True) + "\n")
    return target


def index_entry(path: Path) -> dict[str, Any]:
    """What the index says about one backend file."""
    entries = _read_lines(path)
    return {
        "file": path.name,
        "sha256": "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest(),
        "entries": len(entries),
        "runs": sorted({str(e.get("run")) for e in entries}),
        "devices": sorted({str(e.get("device")) for e in entries}),
        "torch_versions": sorted({str(e.get("torch_version")) for e in entries}),
    }


def _surfaces(record: CaseRecord) -> list[str]:
    listed = record.extra.get("surfaces")
    if isinstance(listed, list) and listed and all(isinstance(s, str) for s in listed):
        return sorted(set(listed))
    return [f"{record.suite}/{record.op}/{record.variant}"]


def _labels(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _option_labels(run_options: dict[str, Any]) -> list[str]:
    """Backend options and forced isolation change how the backend ran: label them.

    A value that is not a path-free label (a profile file path) keeps only its key.
    """
    labels = []
    backend = run_options.get("backend_options")
    if isinstance(backend, dict):
        for key, value in sorted(backend.items()):
            if not isinstance(value, str | int | float | bool):
                continue
            label = f"{key}={value}"
            if LABEL.fullmatch(label):
                labels.append(label)
            elif LABEL.fullmatch(str(key)):
                labels.append(str(key))
    isolate = run_options.get("isolate")
    if isinstance(isolate, str) and isolate == "all":  # ledger/adaptive are defaults
        label = f"isolate={isolate}"
        labels += [label] if LABEL.fullmatch(label) else []
    return labels


def _intent(command: str, identity: HostIdentity) -> str:
    """The command with path arguments cut to their file name: what it meant to do."""
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    words = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if eq and ("/" in value or "\\" in value):
            arg = f"{flag}={Path(value.replace(chr(92), '/')).name}"
        elif ("/" in arg or "\\" in arg) and not _FRACTION.fullmatch(arg):
            arg = Path(arg.replace("\\", "/")).name
        words.append(scrub_text(arg, identity))
    return " ".join(words)[:200] or "unknown"


def _read_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EvidenceError(
                f"{path}: line {number} is not JSON ({exc.msg})"
            ) from None
        out.append(value if isinstance(value, dict) else {"_not_an_object": value})
    return out


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n"
