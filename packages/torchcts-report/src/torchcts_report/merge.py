"""Shard merge: results of one manifest and PyTorch version from several runs into one.

A CI matrix or several machines each run a shard (`torchcts-run --shard I/N`). Merging
is only meaningful when every shard ran the same manifest on the same PyTorch, and it
must never pick one of two different results for the same case silently: both are
errors that name what differs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torchcts_schema import (
    PROBE_FAILURES_INFIX,
    ArtifactError,
    CaseRecord,
    NotRunReason,
    ResultsLayout,
    RunArtifact,
    RunMetadata,
    Status,
    count_statuses,
    find_latest,
    resolve_reference,
    write_history,
)

from torchcts_report.inputs import check_run_key, load_input, results_dir_of

# fields that describe how a case ran, not what it found
_INCIDENTAL = ("duration_s", "worker", "isolation", "extra")
# run options that decide which cases a selection leaves out (counted, not recorded)
_SELECTION_OPTIONS = ("level", "dtypes", "suites", "op_globs", "selection")
OUTSIDE_NOT_MERGED = "outside_not_merged"  # diagnostic: why no outside counts


class MergeError(ArtifactError):
    """Shards that cannot be one result; the message names the shard, key or case."""


@dataclass(frozen=True)
class Shard:
    """One input: a name to cite in errors and its loaded artifact."""

    name: str
    artifact: RunArtifact
    results_dir: Path | None = None
    run_key: str | None = None


def merge_artifacts(shards: list[Shard], *, run_key: str | None = None) -> RunArtifact:
    """One canonical artifact from `shards`, records sorted by case id."""
    if not shards:
        raise MergeError(None, "no shards to merge")
    first = shards[0]
    for shard in shards[1:]:
        for attr_name, what in (
            ("manifest_digest", "manifest digest"),
            ("torch_version", "PyTorch version"),
            ("device", "device"),
        ):
            a = getattr(first.artifact.metadata, attr_name)
            b = getattr(shard.artifact.metadata, attr_name)
            if a != b:
                raise MergeError(
                    shard.name, f"{what} {b!r} differs from {a!r} in {first.name}"
                )
    _refuse_same_run(shards)
    missing = _missing_shards(shards)
    key = run_key or _common_run_key(shards)
    merged: dict[str, tuple[CaseRecord, str]] = {}
    for shard in shards:
        for record in shard.artifact.records:
            held = merged.get(record.case_id)
            if held is None or _yields(held[0], record):
                merged[record.case_id] = (record, shard.name)
            elif not _yields(record, held[0]) and _result(record) != _result(held[0]):
                raise MergeError(
                    shard.name,
                    f"case {record.case_id!r} is {record.status.value} here but "
                    f"{held[0].status.value} in {held[1]} (different results)",
                )
    records = [merged[c][0] for c in sorted(merged)]
    outside, not_merged = _outside(shards)
    metadata = replace(_metadata(shards, key, records), outside=outside)
    diagnostics = _diagnostics(shards)
    if not_merged:
        diagnostics[OUTSIDE_NOT_MERGED] = not_merged
    if missing:
        # a merge without every shard is not a complete run, whatever each shard says
        metadata = replace(metadata, completed_normally=False)
        diagnostics["missing_shards"] = missing
    return RunArtifact.from_records(metadata, records, diagnostics)


def _same_run(a: RunMetadata, b: RunMetadata) -> bool:
    return (a.run_key, a.started_at, a.command) == (b.run_key, b.started_at, b.command)


def _refuse_same_run(shards: list[Shard]) -> None:
    """One run given twice (the same shard, or two copies of it) is not two shards.

    Its cases would agree with themselves and the merge would look complete, so
    overlapping case ids between shards of the same run (same run key, start time
    and command) are an error naming both.
    """
    for later, shard in enumerate(shards):
        for earlier in shards[:later]:
            if not _same_run(earlier.artifact.metadata, shard.artifact.metadata):
                continue
            ids = {r.case_id for r in earlier.artifact.records if not _yielding(r)}
            common = sorted(
                r.case_id
                for r in shard.artifact.records
                if r.case_id in ids and not _yielding(r)
            )
            if common:
                raise MergeError(
                    shard.name,
                    f"is the same run as {earlier.name} (same run key, start time "
                    f"and command) and holds {len(common)} of its case(s), first "
                    f"{common[0]!r}: a shard given twice",
                )


def _yielding(record: CaseRecord) -> bool:
    return (
        record.status is Status.NOT_RUN
        and record.not_run_reason is NotRunReason.FILTERED_BY_SELECTION
    )


def _partition(shards: list[Shard]) -> list[tuple[int, int]] | None:
    """Each shard's (I, N) from its ``--shard`` option; None when one has none."""
    out = []
    for shard in shards:
        value = shard.artifact.metadata.options.get("shard")
        if not isinstance(value, str):
            return None  # unsharded runs (or another tool's): no partition
        index, _, total = value.partition("/")
        if not (index.isdigit() and total.isdigit()):
            raise MergeError(shard.name, f"shard option {value!r} is not I/N")
        out.append((int(index), int(total)))
    return out


def _missing_shards(shards: list[Shard]) -> list[str]:
    """Shards of the partition that no input covers; mixed partitions are an error."""
    partition = _partition(shards)
    if partition is None:
        return []
    seen: dict[int, set[int]] = {}
    for index, total in partition:
        seen.setdefault(total, set()).add(index)
    if len(seen) > 1:
        counts = ", ".join(f"/{n}" for n in sorted(seen))
        raise MergeError(None, f"shards come from different partitions ({counts})")
    ((parts, present),) = seen.items()
    return [f"{i}/{parts}" for i in range(1, parts + 1) if i not in present]


def _outside(shards: list[Shard]) -> tuple[dict[str, int], str | None]:
    """The merged counts of cases outside the selection, or why there are none.

    A sharded subset run counts, not records, the cases of its own shard that lie
    outside its level and filters. Shards of one partition (distinct ``I/N``) of one
    selection count disjoint cases, so the sum is exactly what the unsharded run
    counts. Otherwise the counts may overlap (two runs of one selection count the
    same cases; one shard's left-out cases may be another's records) and no sum is
    right: the merged result carries none, and the diagnostic says why.
    """
    if not any(s.artifact.metadata.outside for s in shards):
        return {}, None
    partition = _partition(shards)
    if partition is None or len(set(partition)) < len(partition):
        return {}, "the shards are not distinct parts of one --shard I/N partition"
    first = shards[0].artifact.metadata.options
    for shard in shards[1:]:
        options = shard.artifact.metadata.options
        differs = [k for k in _SELECTION_OPTIONS if options.get(k) != first.get(k)]
        if differs:
            return {}, (
                f"{shard.name} selected differently from {shards[0].name} "
                f"({', '.join(differs)})"
            )
    total: dict[str, int] = {}
    for shard in shards:
        for reason, count in shard.artifact.metadata.outside.items():
            total[reason] = total.get(reason, 0) + count
    return dict(sorted(total.items())), None


def _yields(held: CaseRecord, other: CaseRecord) -> bool:
    """A case left out by one shard's selection gives way to the shard that ran it."""
    return (
        held.status is Status.NOT_RUN
        and held.not_run_reason is NotRunReason.FILTERED_BY_SELECTION
        and not (
            other.status is Status.NOT_RUN
            and other.not_run_reason is NotRunReason.FILTERED_BY_SELECTION
        )
    )


def _result(record: CaseRecord) -> dict[str, Any]:
    data = record.to_dict()
    for name in _INCIDENTAL:
        data.pop(name, None)
    return data


def _common_run_key(shards: list[Shard]) -> str:
    keys = sorted({s.artifact.metadata.run_key for s in shards})
    if len(keys) > 1:
        raise MergeError(
            None, f"shards have different run keys ({', '.join(keys)}); pass --run-key"
        )
    return keys[0]


def _joined(values: list[str]) -> str:
    unique = sorted(set(values))
    return unique[0] if len(unique) == 1 else "mixed: " + ", ".join(unique)


def _metadata(shards: list[Shard], key: str, records: list[CaseRecord]) -> RunMetadata:
    metas = [s.artifact.metadata for s in shards]
    ended = [m.ended_at for m in metas]
    probes: dict[str, int] = {}
    for meta in metas:
        for name, value in meta.probes.items():
            probes[name] = probes.get(name, 0) + value
    levels = {m.level for m in metas}
    return RunMetadata(
        run_key=key,
        device=metas[0].device,
        hardware_key=_joined([m.hardware_key for m in metas]),
        backend=_joined([m.backend for m in metas]),
        os=_joined([m.os for m in metas]),
        python=_joined([m.python for m in metas]),
        torch_version=metas[0].torch_version,
        torchcts_version=_joined([m.torchcts_version for m in metas]),
        manifest_digest=metas[0].manifest_digest,
        command=_joined([m.command for m in metas]),
        started_at=min(m.started_at for m in metas),
        ended_at=None if None in ended else max(e for e in ended if e is not None),
        completed_normally=all(m.completed_normally for m in metas),
        counts=count_statuses(records),
        level=levels.pop() if len(levels) == 1 else None,
        options={
            "merged_from": [
                {
                    "shard": s.name,
                    "run_key": m.run_key,
                    "hardware_key": m.hardware_key,
                    "command": m.command,
                    "started_at": m.started_at,
                    "ended_at": m.ended_at,
                    "completed_normally": m.completed_normally,
                    "cases": len(s.artifact.records),
                }
                for s, m in sorted(
                    zip(shards, metas, strict=True), key=lambda p: p[0].name
                )
            ]
        },
        probes=probes,
    )


def _diagnostics(shards: list[Shard]) -> dict[str, Any]:
    """Keys all shards agree on stay as they are; conflicting ones keep every value."""
    values: dict[str, list[tuple[str, Any]]] = {}
    for shard in shards:
        for name, value in shard.artifact.diagnostics.items():
            values.setdefault(name, []).append((shard.name, value))
    out: dict[str, Any] = {}
    for name in sorted(values):
        seen = values[name]
        if all(v == seen[0][1] for _, v in seen):
            out[name] = seen[0][1]
        else:
            out[name] = {
                "by_shard": {s: v for s, v in sorted(seen, key=lambda p: p[0])}
            }
    return out


def merge_paths(
    paths: list[Path], out_dir: Path, *, run_key: str | None = None
) -> Path:
    """Load each shard, merge, write the canonical history in `out_dir`, copy evidence.

    Returns the history file written. Crash records and probe failure files of every
    shard are copied beside it so the merged report shows them too.
    """
    seen: dict[Path, Path] = {}
    for path in paths:
        try:
            resolved = _artifact_path(path)
        except ArtifactError:
            continue  # load_input below names the problem
        if resolved in seen:
            raise MergeError(
                path, f"is the same artifact as {seen[resolved]}: a shard given twice"
            )
        seen[resolved] = path
    shards = []
    for index, path in enumerate(paths, start=1):
        loaded = load_input(path)
        shards.append(
            Shard(
                f"shard {index} ({path.name})",
                loaded.artifact,
                results_dir_of(path),
                loaded.run_key,
            )
        )
    merged = merge_artifacts(shards, run_key=run_key)
    key = merged.metadata.run_key
    check_run_key(key, "--run-key")
    target = write_history(out_dir, key, merged)
    for index, shard in enumerate(shards, start=1):
        _copy_evidence(shard, index, out_dir, key)
    return target


def _artifact_path(path: Path) -> Path:
    """The file that holds a shard's data, so two spellings of one shard compare."""
    target = find_latest(path) if path.is_dir() else path
    if target.name.endswith(".json"):
        target = resolve_reference(target)
    return target.resolve()


def _copy_evidence(shard: Shard, index: int, out_dir: Path, key: str) -> None:
    if shard.results_dir is None or shard.run_key is None:
        return
    source = shard.results_dir
    if source.resolve() == out_dir.resolve() and shard.run_key == key:
        return
    shard_layout = ResultsLayout(source, shard.run_key)
    if shard_layout.crashes_dir.is_dir():
        target = ResultsLayout(out_dir, key).crashes_dir
        target.mkdir(parents=True, exist_ok=True)
        for record in shard_layout.glob("crashes"):
            destination = target / record.name
            if destination.exists() and destination.read_bytes() != record.read_bytes():
                raise MergeError(
                    record,
                    f"{destination.name} differs from the copy "
                    "already merged from another shard",
                )
            shutil.copyfile(record, destination)
    for probe_file in shard_layout.glob("probe_failures"):
        suffix = probe_file.name[len(shard.run_key) + len(PROBE_FAILURES_INFIX) :]
        name = f"{key}{PROBE_FAILURES_INFIX}shard{index}-{suffix}"
        shutil.copyfile(probe_file, out_dir / name)
