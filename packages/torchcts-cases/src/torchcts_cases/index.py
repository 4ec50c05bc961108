"""The case index: per-op facts and sample counts of the installed torch, cached on disk.

Counting samples means generating them once, so the index is built per dtype on first
use and cached under ``$TORCHCTS_CACHE_DIR`` (default ``~/.cache/torchcts``), keyed by
the torch version and the index format. Files are written atomically; a file that does
not parse or does not match its key is rebuilt, never trusted. The manifest never
changes the index (it only filters it), so one index serves every manifest.

A cold build costs an OpInfo import plus a pass over every sample, per dtype. The
package ships a seed (``index_seed/<torch version>.json.gz``) for the torch versions it
was built on; it is used only when the torch version and a fingerprint of OpInfo's
source files both match, so a different OpInfo never gets stale counts.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts_schema import DTYPE_NAMES, slug, torch_dir, torch_version, write_atomic

from torchcts_cases.overload_variants import valid_entry as valid_overload_entry
from torchcts_cases.source_digest import files_digest

INDEX_FORMAT = "torchcts-case-index"
INDEX_VERSION = 6  # 6: edge samples, foreach OpInfo lists, in-place surfaces
ERRORS_SHARD = "error_inputs"
OPS_SHARD = "ops"  # every op's facts, no counts: op-name checks and coverage
# every aten overload's generated cases, or why none (`torchcts_cases.overload_index`)
OVERLOADS_SHARD = "overloads"
_NAMED_SHARDS = (ERRORS_SHARD, OPS_SHARD, OVERLOADS_SHARD)
# a shard whose generation changed without a new INDEX_VERSION (which would void
# every shard and the coverage trace with them): a cache or seed of another
# generation of that shard is rebuilt. overloads 2: schema-built calls; 3: foreach
# out=, multi-write overloads, reviewed recipes, outs filled twice
SHARD_GENERATIONS = {OVERLOADS_SHARD: 3}
# nonfinite case N is built from forward sample entry[NONFINITE_SAMPLES][N]; absent
# when that is forward sample N for every case (`catalog.built_sample`)
NONFINITE_SAMPLES = "nonfinite_samples"
# why CPU cannot judge an op's nonfinite cases in this dtype (not_run, selection)
NONFINITE_NOT_VALID = "nonfinite_not_valid"
# {"forward": [i, ...], "backward": [j, ...]}: each pass's edge samples other than
# sample 0 (`torchcts_cases.edge_samples`); absent when there are none
EDGE_SAMPLES = "edge_samples"
_MEMO: dict[str, dict[str, Any]] = {}


def cache_root() -> Path:
    """Where caches live: ``$TORCHCTS_CACHE_DIR`` or ``~/.cache/torchcts``."""
    env = os.environ.get("TORCHCTS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "torchcts"


def index_dir() -> Path:
    """The directory of this torch's index shards."""
    return cache_root() / f"case-index-v{INDEX_VERSION}" / slug(torch_version())


def shard(name: str) -> dict[str, dict[str, Any]]:
    """Index entries of one dtype (or of the dtype-less error inputs), op -> facts."""
    if name not in _NAMED_SHARDS and name not in DTYPE_NAMES:
        raise KeyError(f"unknown dtype {name!r}")
    if name in _MEMO:
        return _MEMO[name]
    path = index_dir() / f"{name}.json"
    entries = _read(path, name)
    if entries is None:
        entries = _seeded(name) or _build(name)
        payload = {
            "format": INDEX_FORMAT,
            "version": INDEX_VERSION,
            "generation": SHARD_GENERATIONS.get(name, 1),
            "torch": torch_version(),
            "shard": name,
            "ops": entries,
        }
        write_atomic(path, json.dumps(payload, sort_keys=True), fsync=False)
    _MEMO[name] = entries
    return entries


def is_warm(name: str) -> bool:
    """Whether a shard is already cached (used by bench and tests)."""
    return name in _MEMO or _read(index_dir() / f"{name}.json", name) is not None


def forget() -> None:
    """Drop the in-process memo (tests use it to measure cold and warm)."""
    _MEMO.clear()


def _read(path: Path, name: str) -> dict[str, dict[str, Any]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not (
        isinstance(data, dict)
        and data.get("format") == INDEX_FORMAT
        and data.get("version") == INDEX_VERSION
        and data.get("generation", 1) == SHARD_GENERATIONS.get(name, 1)
        and data.get("torch") == torch_version()
        and data.get("shard") == name
        and isinstance(data.get("ops"), dict)
        and all(_validator(name)(v) for v in data["ops"].values())
    ):
        return None
    ops: dict[str, dict[str, Any]] = data["ops"]
    return ops


def _validator(name: str) -> Callable[[Any], bool]:
    """How one entry of shard `name` is checked."""
    return valid_overload_entry if name == OVERLOADS_SHARD else _valid_entry


def _valid_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("family"), int)
        and isinstance(entry.get("counts"), dict)
        and all(
            isinstance(k, str) and isinstance(v, int) and v >= 0
            for k, v in entry["counts"].items()
        )
        and entry.get("source")
        in ("cpu_reference", "reviewed_reference", "legal_output", "property")
        and _valid_sample_map(entry)
        and _valid_edges(entry)
        and isinstance(entry.get(NONFINITE_NOT_VALID, ""), str)
    )


def _valid_sample_map(entry: dict[str, Any]) -> bool:
    """A nonfinite sample map holds one increasing forward index per nonfinite case."""
    samples = entry.get(NONFINITE_SAMPLES)
    if samples is None:
        return True
    forward = entry["counts"].get("forward", 0)
    return (
        isinstance(samples, list)
        and len(samples) == entry["counts"].get("nonfinite", 0)
        and all(type(n) is int for n in samples)
        and all(0 <= a < b for a, b in itertools.pairwise(samples))
        and all(0 <= n < forward for n in samples)
    )


def _valid_edges(entry: dict[str, Any]) -> bool:
    """Edge samples are increasing indices of samples the pass has."""
    edges = entry.get(EDGE_SAMPLES, {})
    if not isinstance(edges, dict):
        return False
    for stream, samples in edges.items():
        count = entry["counts"].get(stream, 0)
        if not (
            stream in ("forward", "backward")
            and isinstance(samples, list)
            and all(type(n) is int for n in samples)
            and all(a < b for a, b in itertools.pairwise([0, *samples]))
            and all(n < count for n in samples)
        ):
            return False
    return True


def _build(name: str) -> dict[str, dict[str, Any]]:
    if name == OVERLOADS_SHARD:
        from torchcts_cases import overload_index

        return overload_index.build()
    import torch

    from torchcts_cases import opinfo_source

    entries: dict[str, dict[str, Any]] = {}
    for segment, op in sorted(opinfo_source.op_table().items()):
        counts: dict[str, int] = {}
        problem: str | None = None
        extra: dict[str, Any] = {}
        if name == ERRORS_SHARD:
            count, problem = opinfo_source.error_count(op)
            counts = {"error_inputs": count} if count else {}
        elif name != OPS_SHARD:
            counted = opinfo_source.variant_counts(op, getattr(torch, name))
            counts, problem = counted.counts, counted.problem
            samples = counted.nonfinite_samples
            if samples != list(range(len(samples))):
                extra[NONFINITE_SAMPLES] = samples
            if counted.nonfinite_not_valid:
                extra[NONFINITE_NOT_VALID] = counted.nonfinite_not_valid
            if counted.edges:
                extra[EDGE_SAMPLES] = counted.edges
        if counts or problem or name == OPS_SHARD:
            facts = opinfo_source.describe(op)
            entries[segment] = {**facts, "counts": counts, "problem": problem, **extra}
    return entries


SEED_DIR = Path(__file__).parent / "index_seed"


@functools.cache
def opinfo_fingerprint() -> str:
    """sha256 of the OpInfo source files of the installed torch (read, not imported)."""
    root = torch_dir() / "testing" / "_internal"
    files = sorted(
        [root / "common_methods_invocations.py", *(root / "opinfo").rglob("*.py")]
    )
    return files_digest(root, files)


def _seed_path() -> Path:
    return SEED_DIR / f"{slug(torch_version())}.json.gz"


def _seed_payload() -> dict[str, Any] | None:
    """The packaged seed of this torch, parsed once per process (a fresh cache reads
    every shard from it); None when it is absent or does not parse."""
    return _parsed_seed(_seed_path())


@functools.cache
def _parsed_seed(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    return data if isinstance(data, dict) else None


def _current_seed() -> dict[str, Any] | None:
    """The packaged seed's shards when it was built from this torch, OpInfo and
    `INDEX_VERSION`; None for any other seed, or one that does not read."""
    data = _seed_payload()
    if not (
        data is not None
        and data.get("format") == INDEX_FORMAT
        and data.get("version") == INDEX_VERSION
        and data.get("torch") == torch_version()
        and data.get("fingerprint") == opinfo_fingerprint()
        and isinstance(data.get("shards"), dict)
    ):
        return None
    shards: dict[str, Any] = data["shards"]
    return shards


def _seeded(name: str) -> dict[str, dict[str, Any]] | None:
    """A shard from the packaged seed, when it was built from this exact OpInfo."""
    shards = _current_seed()
    generations = _seed_generations()
    if generations.get(name, 1) != SHARD_GENERATIONS.get(name, 1):
        return None
    ops = None if shards is None else shards.get(name)
    if not isinstance(ops, dict) or not all(_validator(name)(v) for v in ops.values()):
        return None
    entries: dict[str, dict[str, Any]] = ops
    return entries


def write_seed(names: list[str]) -> Path:
    """Write the packaged seed from fresh builds of `names` (maintainers).

    Never from the seed being replaced nor from a cache: after a change to the
    generation that keeps `INDEX_VERSION`, both still match this torch and OpInfo
    and would be written back unchanged.
    """
    return _write_seed_payload({name: _build(name) for name in names})


def _seed_generations() -> dict[str, int]:
    """The shard generations the packaged seed was written with (1 where absent)."""
    generations = (_seed_payload() or {}).get("generations", {})
    return generations if isinstance(generations, dict) else {}


def _write_seed_payload(shards: dict[str, dict[str, dict[str, Any]]]) -> Path:
    payload = {
        "format": INDEX_FORMAT,
        "version": INDEX_VERSION,
        "generations": {n: SHARD_GENERATIONS.get(n, 1) for n in sorted(shards)},
        "torch": torch_version(),
        "fingerprint": opinfo_fingerprint(),
        "shards": shards,
    }
    path = _seed_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    _parsed_seed.cache_clear()
    return path


def add_to_seed(names: list[str]) -> Path:
    """Rebuild `names` into the packaged seed and keep its other shards (maintainers).

    For a new shard, or one whose generation changed alone: the others are kept only
    from a seed of this torch, OpInfo and `INDEX_VERSION`, whose generation this
    change left alone; refreshing every shard (`write_seed`) costs a pass over every
    sample of every dtype.
    """
    kept = _current_seed()
    if kept is None:
        raise ValueError(f"{_seed_path()}: no seed of this torch and OpInfo to add to")
    shards = {**kept, **{name: _build(name) for name in names}}
    return _write_seed_payload(shards)


def seed_shard_names() -> list[str]:
    """The shards the packaged seed holds now (what a refresh rebuilds by default)."""
    shards = (_seed_payload() or {}).get("shards")
    if isinstance(shards, dict):
        return sorted(shards)
    return [OPS_SHARD, ERRORS_SHARD, "float32"]


if __name__ == "__main__":
    # python -m torchcts_cases.index [float32 int64 ...]: refresh the packaged seed
    # (by default every shard it already holds, so a refresh never drops dtypes);
    # python -m torchcts_cases.index --add overloads: rebuild only those shards
    if sys.argv[1:2] == ["--add"]:
        print(add_to_seed(sys.argv[2:]))
    else:
        print(write_seed(sys.argv[1:] or seed_shard_names()))
