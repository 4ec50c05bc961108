"""The entry points a child interpreter calls: ``torchcts_runner.child_entry:run_case``
(one case) and ``torchcts_runner.child_entry:warm_child`` (once, before it takes cases).

Nothing here imports pytest, so an isolation child stays a light interpreter.

`torchcts_isolate` starts a fresh interpreter (or a warm one) and calls
``run_case(payload)``; it returns ``CaseRecord.to_dict()``. Payload keys: ``case_id``,
``manifest`` (path), ``device``, ``results_dir``, ``options`` (``run_key``,
``case_source``, ``validation``, ``timeout_s``, ``worker``, ``isolation``, and
``probe_before`` for the fresh run that settles a failed device probe). The context
is cached per process, so a warm child pays for the manifest and imports once. A
child runs on its worker's device: it pins itself from ``options.worker`` as the
worker does (`torchcts_runner.device_pinning`).
"""

from __future__ import annotations

import contextlib
import importlib
from functools import cache
from pathlib import Path
from typing import Any

from torchcts_schema import JsonDict, load_manifest

from torchcts_runner.backend import ensure_backend
from torchcts_runner.case_execution import CaseContext, execute_case
from torchcts_runner.casesource import load_case_source
from torchcts_runner.defaults import DEFAULT_CASE_SOURCE
from torchcts_runner.probes import PROBES_KIND, probes_beside_cases
from torchcts_runner.timeouts import case_deadline
from torchcts_runner.warm_start import CASE_TABLES_HOOK


@cache
def _context(
    manifest: str,
    device: str,
    results_dir: str,
    run_key: str,
    case_source: str,
    validation: bool,
    worker: str,
    isolation: str,
    probe_before: bool,
) -> CaseContext:
    return CaseContext(
        manifest=load_manifest(manifest),
        source=load_case_source(case_source),
        device=device,
        results_dir=Path(results_dir),
        run_key=run_key,
        worker=worker,
        validation=validation,
        isolation=isolation,
        probe_before=probe_before,
        name_surfaces=False,  # the parent names them (`IsolationPolicy`)
    )


REPRO_KIND = "repro"  # a payload that asks for a case's repro script


def run_case(payload: dict[str, Any]) -> JsonDict:
    """Execute the case named in `payload` here and return its record as a dict
    (a payload of kind ``probes``: the run's probe table, `run_probe_payload`; of
    kind ``repro``: a case's repro script, `repro_payload`)."""
    if payload.get("kind") == PROBES_KIND:
        return run_probe_payload(payload)
    if payload.get("kind") == REPRO_KIND:
        return repro_payload(payload)
    options = dict(payload.get("options") or {})
    ctx = _context(
        str(payload["manifest"]),
        str(payload["device"]),
        str(payload["results_dir"]),
        str(options.get("run_key", "unknown")),
        str(options.get("case_source") or DEFAULT_CASE_SOURCE),
        bool(options.get("validation", False)),
        str(options.get("worker", "child")),
        str(options.get("isolation", "subprocess")),
        bool(options.get("probe_before", False)),
    )
    spec = ctx.source.get_case(str(payload["case_id"]))
    limit = options.get("timeout_s")
    # in a child the parent's watchdog decides about hangs; only stage one runs here
    with case_deadline(float(limit) if limit else None, lambda: None):
        record = execute_case(spec, ctx)
    return record.to_dict()


def run_probe_payload(payload: dict[str, Any]) -> JsonDict:
    """Every probe, here: a warm child of ``--isolate all`` has torch and the backend
    loaded, so the probes cost no interpreter of their own."""
    rows = probes_beside_cases(str(payload["manifest"]), str(payload["device"]))
    return {"probe_rows": rows}


def repro_payload(payload: dict[str, Any]) -> JsonDict:
    """The repro script of a case that crashed another child (``{"script": None}``
    when it cannot be built): this warm child has the case source and its tables
    loaded, where building it in the run's process would import them there (the
    OpInfo database: seconds) beside the children's own imports. Inputs are built
    on CPU only; nothing runs on the device."""
    manifest = load_manifest(str(payload["manifest"]))
    source = load_case_source(str(payload.get("case_source") or DEFAULT_CASE_SOURCE))
    spec = source.get_case(str(payload["case_id"]))
    return {"script": source.repro_source(spec, manifest, str(payload["device"]))}


def warm_child(args: dict[str, Any]) -> None:
    """Run once in each isolation child before it takes cases: import and configure
    the backend, let the case source load its catalogue and build one case's inputs
    (on CPU), so that one-time cost never counts against (or times out) the first
    case. Problems are left for the cases to report, exactly as in process.

    A source with ``import_case_tables`` imports only its tables here: its
    ``warm_up`` also reads what records name (the coverage trace), which the parent
    does for a child's records (`CaseContext.name_surfaces`), beside this warm-up."""
    manifest = load_manifest(args["manifest"])
    ensure_backend(manifest.backend_import, manifest.backend_options)
    name = str(args.get("case_source") or "torchcts_cases")
    with contextlib.suppress(Exception):
        module = importlib.import_module(name)
        warm = getattr(module, CASE_TABLES_HOOK, None) or getattr(
            module, "warm_up", None
        )
        if callable(warm):
            warm()
    if args.get("case_id"):
        with contextlib.suppress(Exception):  # inputs on CPU only: nothing runs here
            source = load_case_source(name)
            source.prepare(source.get_case(str(args["case_id"])), manifest)


__all__ = ["REPRO_KIND", "repro_payload", "run_case", "run_probe_payload", "warm_child"]
