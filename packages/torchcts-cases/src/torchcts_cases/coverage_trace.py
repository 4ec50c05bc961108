"""Which aten overloads TorchCTS cases actually reach, observed on CPU, case by case.

The universe is what selection lists for a manifest that declares every dtype,
capability and level (`universe`): every variant, sample and dtype of every case
family, so a family added to the catalog is traced without a change here. Each case's
CPU run is recorded by a dispatch mode (after composite ops decompose, i.e. what a
backend sees); inputs are built before the mode is pushed, and an out= case's
functional reference is computed before it, so neither counts as reached.

The whole universe costs tens of CPU-minutes, so the trace is cached per torch
version and case index (`trace_key`), written every minute while it is built and
resumed from what was written: an interrupted build loses at most a minute, and a
catalog that grows (another case family, another torch's samples) traces only its
new case ids. The package ships a seed for the torch it was built on
(``coverage_seed/``), used only when torch, index and OpInfo source all match; a
seed packaged from a partial build says so (``complete`` false), and a build on
another machine resumes from it.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts_schema import (
    DTYPE_NAMES,
    FEATURE_CAPABILITIES,
    SUITE_CAPABILITIES,
    VARIANT_CAPABILITIES,
    Manifest,
    slug,
    torch_version,
    write_atomic,
)

from torchcts_cases import index
from torchcts_cases.overload_variants import SUITE as OVERLOAD_SUITE
from torchcts_cases.source_digest import package_digest
from torchcts_cases.spec import CaseSpec, Selection
from torchcts_cases.trace_store import StoredTrace, encode, read_trace

TRACE_VERSION = 3  # 3: every case of the universe, per case
SEED_DIR = Path(__file__).parent / "coverage_seed"
FLUSH_SECONDS = 60.0
FIRST_DTYPES = ("float32", "int64", "bool", "float64")
Progress = Callable[[str], None]


def trace_key() -> dict[str, Any]:
    """What a trace is valid for: this torch, this index format and OpInfo source."""
    return {
        "torch": torch_version(),
        "index_version": index.INDEX_VERSION,
        "opinfo": index.opinfo_fingerprint(),
        "trace_version": TRACE_VERSION,
    }


def catalog_digest() -> str:
    """sha256 of this package's sources: when it changes, the universe is listed
    again and only case ids the trace lacks are traced."""
    return package_digest()


def trace_path() -> Path:
    """The cached trace of this torch and index."""
    return index.index_dir() / f"coverage-trace-v{TRACE_VERSION}.json"


def seed_path() -> Path:
    """The packaged seed for this torch version."""
    return SEED_DIR / f"{slug(torch_version())}.json.gz"


def load() -> StoredTrace | None:
    """The cached trace, else the packaged seed, when either is of this torch/index."""
    key = trace_key()
    return read_trace(trace_path(), key) or read_trace(seed_path(), key)


def is_current(trace: StoredTrace | None) -> bool:
    """A complete trace of this very catalog: nothing to list or trace."""
    return trace is not None and trace.complete and trace.catalog == catalog_digest()


def universe_manifest() -> Manifest:
    """A manifest that declares everything: selection then lists every case."""
    return Manifest(
        path=Path("coverage-trace"),
        digest="",
        device="coverage-trace",  # not "cpu": cases needing another device are listed
        backend_name="coverage-trace",
        dtypes=dict.fromkeys(DTYPE_NAMES, True),
        capabilities=(
            *VARIANT_CAPABILITIES,
            *SUITE_CAPABILITIES,
            *FEATURE_CAPABILITIES,
        ),
        level=8,
        device_count=8,
    )


def universe() -> list[CaseSpec]:
    """Every case the catalog has for this torch, in selection's run order."""
    from torchcts_cases.select import select_cases

    return select_cases(universe_manifest(), Selection(level=8)).runnable


def build(progress: Progress | None = None) -> StoredTrace:
    """The trace of the whole universe: cached when current, else topped up."""
    old = load()
    if is_current(old):
        assert old is not None
        return old
    say = progress or _stderr
    specs = universe()
    trace = StoredTrace(key=trace_key(), catalog=catalog_digest(), universe=len(specs))
    if old is not None:
        trace.cpu_seconds = old.cpu_seconds
    todo: list[CaseSpec] = []
    for spec in specs:
        trace.declare(spec.case_id, spec.surfaces)
        if old is not None and old.has(spec.case_id):
            trace.put(spec.case_id, old.reached(spec.case_id) or ())
        else:
            todo.append(spec)
    todo.sort(key=_priority)
    if todo:
        say(
            f"coverage trace: {len(todo):,} of {len(specs):,} cases to trace on the "
            f"CPU (cached in {trace_path()}; an interrupted build resumes)"
        )
    _trace_all(trace, todo, say)
    trace.complete = True
    write_atomic(trace_path(), encode(trace))
    return trace


def _priority(spec: CaseSpec) -> int:
    """Trace order: hand cases and error inputs (few), then the dtypes most backends
    declare, so a build cut short already says most; a dtype keeps selection's
    op -> variant -> sample order, which OpInfo's sample streams need to stay linear."""
    if spec.suite != "opinfo" or spec.dtype is None:
        return -1
    if spec.dtype in FIRST_DTYPES:
        return FIRST_DTYPES.index(spec.dtype)
    return len(FIRST_DTYPES) + DTYPE_NAMES.index(spec.dtype)


def _trace_all(trace: StoredTrace, todo: list[CaseSpec], say: Progress) -> None:
    cpu = _manifest()
    last = time.monotonic()
    started = time.process_time()
    try:
        for done, spec in enumerate(todo, 1):
            trace.put(spec.case_id, reached_by(spec, cpu))
            if time.monotonic() - last >= FLUSH_SECONDS:
                trace.cpu_seconds += time.process_time() - started
                started = time.process_time()
                write_atomic(trace_path(), encode(trace))
                last = time.monotonic()
                say(
                    f"coverage trace: {done:,} of {len(todo):,} traced, "
                    f"{trace.cpu_seconds / 60:.1f} CPU-min so far"
                )
    finally:  # an interrupted build keeps what it traced
        trace.cpu_seconds += time.process_time() - started
        if not trace.complete:
            write_atomic(trace_path(), encode(trace))


def _manifest() -> Manifest:
    return Manifest(
        path=Path("coverage-trace"), digest="", device="cpu", backend_name="cpu"
    )


def reached_by(spec: CaseSpec, manifest: Manifest) -> set[str]:
    """The overloads one case's CPU run dispatches (also when it fails part way)."""
    from torchcts_cases import prepare
    from torchcts_cases.dispatch_recorder import OverloadRecorder

    recorder = OverloadRecorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prepared = prepare(spec, manifest)
            opinfo = spec.suite == "opinfo"
            if opinfo:  # inputs are built on CPU and copied: no backend sees that
                prepared.sample()  # type: ignore[attr-defined]
                if spec.variant == "out":  # the functional reference runs on CPU
                    prepared.reference()
            if spec.suite == OVERLOAD_SUITE:  # its call: a donor's replay, or built
                prepared.call()  # type: ignore[attr-defined]
            with recorder:
                if opinfo and spec.variant != "out":
                    prepared.reference()
                else:
                    # out=: the out= call itself; a hand case: its check on CPU
                    # (device-pair checks run CPU-only here: the same overloads)
                    prepared.run_on("cpu")
        except Exception:  # a failing sample still reached the overloads it dispatched
            pass
    return recorder.seen


def observed_overloads(trace: StoredTrace) -> dict[str, dict[str, list[str]]]:
    """{"opinfo": {overload: [op, ...]}, "suites": {overload: [case, ...]}}."""
    hits: dict[str, dict[str, set[str]]] = {"opinfo": {}, "suites": {}}
    for who, kind, at in _who(trace, trace.groups.items(), trace.cases.items()):
        for name in trace.names_of(at):
            hits[kind].setdefault(name, set()).add(who)
    return {
        kind: {k: sorted(v) for k, v in sorted(found.items())}
        for kind, found in hits.items()
    }


def declared_overloads(trace: StoredTrace) -> set[str]:
    """Every surface some case declares (OpInfo: the op's aten packets)."""
    names: set[str] = set()
    for at in set(trace.declared.values()):
        names.update(trace.names_of(at))
    return names


def _who(trace: StoredTrace, groups: Any, cases: Any) -> list[tuple[str, str, int]]:
    """(who, "opinfo" or "suites", set position), once per distinct pair."""
    out: set[tuple[str, str, int]] = set()
    for prefix, row in groups:
        suite, op = _suite_op(prefix)
        who = op if suite == "opinfo" else prefix.rstrip("/")
        kind = "opinfo" if suite == "opinfo" else "suites"
        out.update((who, kind, at) for at in set(row) if at >= 0)
    for case_id, at in cases:
        suite, _ = _suite_op(case_id)
        out.add((case_id, "opinfo" if suite == "opinfo" else "suites", at))
    return sorted(out)


def _suite_op(case_id: str) -> tuple[str, str]:
    parts = case_id.split("/")
    return parts[0], parts[1] if len(parts) > 1 else ""


def read_seed() -> StoredTrace | None:
    """The packaged seed alone (what the README's figures are computed from, so
    they do not depend on a machine's cache)."""
    return read_trace(seed_path(), trace_key())


def write_seed() -> Path:
    """Package the cached trace as the seed (maintainers, after `build`). A partial
    trace is packaged as partial: a build resumes from it, figures say so."""
    trace = read_trace(trace_path(), trace_key())
    if trace is None:
        raise FileNotFoundError(f"{trace_path()}: no trace to package; build it first")
    path = seed_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(trace, compress=True))
    return path


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    # python -m torchcts_cases.coverage_trace: build (resumes); --seed: package it
    if "--seed" in sys.argv[1:]:
        print(write_seed())
    else:
        print(f"{trace_path()}: {(build().complete and 'complete') or 'partial'}")
