"""``torchcts-cases discover``: probe, read the evidence, propose DTYPES and OPS.

The steps live in their own modules (`discovery_probe` runs the real runner,
`discovery_evidence` counts, `discovery_decide` decides, `discovery_text` and
`discovery_report` write); this one wires them and checks that an existing probe
result (``--from-results``) really is a probe of this manifest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts_schema import (
    DTYPE_NAMES,
    ArtifactError,
    load_manifest,
    load_result,
    manifest_digest,
    tool_command,
    tool_prefix_at,
    write_atomic,
)

from torchcts_cases import index
from torchcts_cases.discovery_decide import Proposal, decide
from torchcts_cases.discovery_evidence import (
    PROBE_VARIANTS,
    Cell,
    EvidenceError,
    collect_cells,
)
from torchcts_cases.discovery_probe import (
    discovery_dir,
    run_probe,
    write_probe_manifest,
)
from torchcts_cases.discovery_report import (
    JSON_NAME,
    MARKDOWN_NAME,
    document,
    json_text,
    markdown,
)
from torchcts_cases.discovery_text import Commands, proposed_manifest

DEFAULT_SAMPLES = 2
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
MAX_SAMPLES = 64
STDOUT_NAME = "proposed_manifest.py"  # what commands call a proposal sent to stdout


@dataclass(frozen=True)
class DiscoverRequest:
    """What the command line asked for."""

    manifest: Path
    results: Path
    samples: int = DEFAULT_SAMPLES
    op_globs: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    workers: str | None = None
    resume: bool = False
    from_results: Path | None = None
    out: Path | None = None


@dataclass(frozen=True)
class Discovery:
    """A finished discovery: the decisions and every text written from them."""

    proposal: Proposal
    cells: Mapping[tuple[str, str], Cell]
    manifest_text: str
    markdown: str
    document: dict[str, Any]
    run_dir: Path


def discover(request: DiscoverRequest) -> Discovery:
    """Probe (unless `from_results`), decide, and write discovery.md/.json beside
    the probe's results; the caller writes the proposal where it belongs."""
    _check(request)
    manifest = load_manifest(request.manifest)
    probe = write_probe_manifest(request.manifest, request.results, request.samples)
    if request.from_results is None:
        summary = run_probe(
            probe,
            request.results,
            op_globs=list(request.op_globs),
            dtypes=list(request.dtypes),
            workers=request.workers,
            resume=request.resume,
        )
        run_dir = Path(str(summary["results"]))
    else:
        run_dir = request.from_results
    artifact = load_result(run_dir)
    meta = artifact.metadata
    if meta.manifest_digest != manifest_digest(probe):
        raise ArtifactError(
            run_dir,
            f"not a probe of {request.manifest} with --samples {request.samples} "
            "(its manifest digest differs); run discover without --from-results",
        )
    if not meta.completed_normally:
        raise ArtifactError(
            run_dir, "the probe did not complete; continue it with --resume"
        )
    op_globs, dtypes = _probe_filters(meta.options, run_dir)
    names = {
        op: str(entry.get("name", op))
        for op, entry in index.shard(index.OPS_SHARD).items()
    }
    try:
        cells = collect_cells(artifact.records, names)
    except EvidenceError as exc:
        raise ArtifactError(run_dir, str(exc)) from None
    proposal = decide(
        cells, names, manifest.dtypes, dtypes or DTYPE_NAMES, subset=bool(op_globs)
    )
    commands = Commands(
        runner=tool_command("torchcts-run", tool_prefix_at()),
        proposed=_shown(request.out) if request.out else STDOUT_NAME,
        probe=_shown(probe),
        op_globs=op_globs,
        dtypes=dtypes,
        level=manifest.level,
        probe_results=_shown(discovery_dir(request.results)),
        environment=_replayable(meta.options.get("environment")),
    )
    origin = _origin(request, meta.torch_version, meta.options, run_dir)
    source = request.manifest.read_text(encoding="utf-8")
    text = proposed_manifest(
        source, request.manifest, manifest, proposal, cells, commands, origin
    )
    page = markdown(proposal, cells, commands, origin)
    doc = document(
        proposal,
        cells,
        origin=origin,
        results=_shown(run_dir),
        probe=_shown(probe),
        proposal_text=text,
    )
    write_atomic(run_dir / MARKDOWN_NAME, page)
    write_atomic(run_dir / JSON_NAME, json_text(doc))
    return Discovery(proposal, cells, text, page, doc, run_dir)


def _check(request: DiscoverRequest) -> None:
    if not 1 <= request.samples <= MAX_SAMPLES:
        raise ValueError(f"--samples must be 1-{MAX_SAMPLES}, not {request.samples}")
    for dtype in request.dtypes:
        if dtype not in DTYPE_NAMES:
            raise ValueError(
                f"unknown dtype {dtype!r} (known: {', '.join(DTYPE_NAMES)})"
            )
    if _same_file(request.out, request.manifest):
        raise ValueError(
            f"--out {request.out}: that is the manifest itself; write the proposal "
            "elsewhere and compare"
        )


def _same_file(out: Path | None, manifest: Path) -> bool:
    return (
        out is not None
        and out.exists()
        and manifest.exists()
        and (out.samefile(manifest))
    )


def _probe_filters(
    options: Mapping[str, Any], run_dir: Path
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The probe's own --op and --dtype filters, as its metadata recorded them."""
    globs, dtypes = options.get("op_globs") or [], options.get("dtypes") or []
    if not (
        isinstance(globs, list)
        and all(isinstance(g, str) and g.isprintable() for g in globs)
        and isinstance(dtypes, list)
        and all(d in DTYPE_NAMES for d in dtypes)
    ):
        raise ArtifactError(
            run_dir, "the probe's recorded --op / --dtype are malformed"
        )
    return tuple(globs), tuple(d for d in DTYPE_NAMES if d in dtypes)


def _origin(
    request: DiscoverRequest,
    torch_version: str,
    options: Mapping[str, Any],
    run_dir: Path,
) -> str:
    parts = [
        f"probe of {_shown(request.manifest)}",
        f"{', '.join(PROBE_VARIANTS)}, up to {request.samples} sample(s) per op, "
        "variant and dtype",
        f"torch {torch_version}",
        f"results {_shown(run_dir)}",
    ]
    environment = options.get("environment")
    if isinstance(environment, dict) and environment:
        parts.append(
            "environment "
            + " ".join(f"{k}={v}" for k, v in sorted(environment.items()))
        )
    return "; ".join(p if p.isprintable() else ascii(p) for p in parts)


def _replayable(environment: Any) -> tuple[tuple[str, str], ...]:
    """The recorded backend environment a pasted command can set again: a value
    recorded as ``name@sha256:...`` (a file path, kept private) cannot be."""
    if not isinstance(environment, dict):
        return ()
    return tuple(
        (name, value)
        for name, value in sorted(environment.items())
        if isinstance(name, str)
        and ENV_NAME.fullmatch(name)
        and isinstance(value, str)
        and "@sha256:" not in value
    )


def _shown(path: Path) -> str:
    """`path` as a command should name it: relative to here, never absolute."""
    if not path.is_absolute():
        return path.as_posix()
    try:
        return Path(os.path.relpath(path, Path.cwd())).as_posix()
    except ValueError:
        return path.name


__all__ = ["DEFAULT_SAMPLES", "DiscoverRequest", "Discovery", "discover"]
