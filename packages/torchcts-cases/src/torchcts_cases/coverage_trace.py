"""Which aten overloads TorchCTS cases actually reach, observed on CPU.

A dispatch mode records every overload a case's CPU run dispatches (after composite
ops decompose, i.e. what a backend sees). The trace is cached per torch version, like
the case index, because it takes a minute to build.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from torchcts_schema import Manifest, write_atomic

from torchcts_cases import index
from torchcts_cases.catalog import group_specs, opinfo_groups
from torchcts_cases.dispatch_recorder import OverloadRecorder
from torchcts_cases.spec import CaseSpec
from torchcts_cases.suites import all_hand_cases

TRACE_VERSION = 2
TRACE_DTYPES = ("float32", "int64", "bool")
TRACE_VARIANTS = {"forward": 2, "inplace": 1, "out": 1, "backward": 1}


_Recorder = OverloadRecorder


def _manifest() -> Manifest:
    return Manifest(
        path=Path("coverage-trace"), digest="", device="cpu", backend_name="cpu"
    )


def trace_path() -> Path:
    """The cached trace of this torch."""
    return index.index_dir() / f"coverage-trace-v{TRACE_VERSION}.json"


def observed_overloads() -> dict[str, dict[str, list[str]]]:
    """{"opinfo": {overload: [op, ...]}, "suites": {overload: [case, ...]}}, cached."""
    path = trace_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("torch") == torch.__version__ and isinstance(
            data.get("trace"), dict
        ):
            trace: dict[str, dict[str, list[str]]] = data["trace"]
            return trace
    except (OSError, ValueError):
        pass
    trace = {"opinfo": _trace_opinfo(), "suites": _trace_suites()}
    write_atomic(path, json.dumps({"torch": torch.__version__, "trace": trace}))
    return trace


def _run(
    spec: CaseSpec, manifest: Manifest, hits: dict[str, set[str]], who: str
) -> None:
    from torchcts_cases import prepare

    recorder = _Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prepared = prepare(spec, manifest)
            with recorder:
                if spec.suite == "opinfo" and spec.variant != "out":
                    prepared.reference()
                else:  # out= references are functional: run the out= call itself
                    prepared.run_on("cpu")
        except Exception:  # a failing sample still reached the overloads it dispatched
            pass
    for name in recorder.seen:
        hits.setdefault(name, set()).add(who)


def _trace_opinfo() -> dict[str, list[str]]:
    manifest = _manifest()
    hits: dict[str, set[str]] = {}
    done: set[tuple[str, str]] = set()
    for dtype in TRACE_DTYPES:
        for op, entry, variant, count in opinfo_groups(dtype):
            if variant not in TRACE_VARIANTS or (op, variant) in done:
                continue
            done.add((op, variant))
            for spec in group_specs(
                op, entry, variant, dtype, range(min(count, TRACE_VARIANTS[variant]))
            ):
                _run(spec, manifest, hits, op)
    return {k: sorted(v) for k, v in sorted(hits.items())}


def _trace_suites() -> dict[str, list[str]]:
    manifest = _manifest()
    hits: dict[str, set[str]] = {}
    for case in all_hand_cases().values():
        assert case.spec is not None
        # device-pair checks run CPU-only here: still the overloads they dispatch
        _run(case.spec, manifest, hits, case.spec.case_id)
    return {k: sorted(v) for k, v in sorted(hits.items())}
