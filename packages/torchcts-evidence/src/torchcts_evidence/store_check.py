"""Verify the committed backend evidence store (what ``bin/nox -s lint`` runs).

Checks every entry against the schema, every string for paths and this host's
identity, each file name against its backend, and the index against the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchcts_schema import HostIdentity, find_identity, tool_command, tool_prefix_at

from torchcts_evidence.backend_store import index_entry
from torchcts_evidence.errors import EvidenceError
from torchcts_evidence.store_schema import (
    INDEX_FORMAT,
    INDEX_NAME,
    INDEX_VERSION,
    entry_problems,
)

ALLOWED_FILES = frozenset({INDEX_NAME, "README.md"})


def check_store(store: Path, identity: HostIdentity | None = None) -> list[str]:
    """Every problem in `store`, each naming the file (and line); empty when clean."""
    ident = identity or HostIdentity.current()
    ident = HostIdentity(ident.host_names, ident.user_names, ident.homes)
    if not store.is_dir():
        return [f"{store}: evidence store directory is missing"]
    problems: list[str] = []
    for path in sorted(store.iterdir()):
        if path.name not in ALLOWED_FILES and path.suffix != ".jsonl":
            problems.append(
                f"{path}: not an evidence file (only <backend>.jsonl, {INDEX_NAME} "
                "and README.md belong here; send raw artifacts separately)"
            )
        elif path.is_symlink() or not path.is_file():
            problems.append(f"{path}: not a regular file")
    files = sorted(p for p in store.glob("*.jsonl") if p.is_file())
    for path in files:
        problems += _check_file(path, ident)
    problems += _check_index(store, files)
    return problems


def _check_file(path: Path, ident: HostIdentity) -> list[str]:
    problems: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: unreadable ({exc})"]
    if text and not text.endswith("\n"):
        problems.append(f"{path}: last line is not terminated (truncated write?)")
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        if not line.strip():
            problems.append(f"{where}: blank line")
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        problems += [f"{where}: {p}" for p in entry_problems(entry)]
        leaks = find_identity(line, ident)
        problems += [f"{where}: holds {leak}" for leak in leaks]
        if not isinstance(entry, dict):
            continue
        if entry.get("backend") != path.stem:
            problems.append(
                f"{where}: backend {entry.get('backend')!r} does not match the file name"
            )
        key = (entry.get("run"), entry.get("surface"), entry.get("expected_source"))
        if key in seen:
            problems.append(f"{where}: duplicate entry for run/surface/source {key}")
        seen.add(key)
    return problems


def _check_index(store: Path, files: list[Path]) -> list[str]:
    index_path = store / INDEX_NAME
    if not files and not index_path.exists():
        return []
    if not index_path.exists():
        evidence = tool_command("torchcts-evidence", tool_prefix_at())
        return [f"{index_path}: missing; run {evidence} backend-pack --reindex"]
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{index_path}: unreadable or not JSON ({exc})"]
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        return [f"{index_path}: format is not {INDEX_FORMAT!r}"]
    if index.get("format_version") != INDEX_VERSION:
        return [f"{index_path}: unknown format_version {index.get('format_version')!r}"]
    listed = index.get("backends")
    if not isinstance(listed, dict):
        return [f"{index_path}: 'backends' is not an object"]
    problems = []
    for name in sorted(set(listed) - {p.stem for p in files}):
        problems.append(f"{index_path}: lists {name!r} but {name}.jsonl does not exist")
    for path in files:
        if path.stem not in listed:
            problems.append(f"{index_path}: does not list {path.name}")
            continue
        try:
            expected = index_entry(path)
        except EvidenceError as exc:
            problems.append(str(exc))
            continue
        for key, value in expected.items():
            if listed[path.stem].get(key) != value:
                problems.append(
                    f"{index_path}: {path.stem}.{key} is {listed[path.stem].get(key)!r}, "
                    f"the file says {value!r} (rebuild with backend-pack --reindex)"
                )
    return problems
