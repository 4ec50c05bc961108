"""Reading a dtype discovery's ``discovery.json`` for the scorecard, trusting nothing.

`torchcts-cases discover` leaves its evidence under ``<results>/discovery/`` (a subset
probe under ``discovery/selections/<name>/``). The report imports neither torch nor
torchcts-cases, so the file is read with the standard library and every field the
scorecard uses is type-checked here: a damaged or crafted file becomes one problem
line naming it (relative path), never a traceback and never a half-read table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torchcts_schema import (
    DISCOVERY_DIR,
    DISCOVERY_FORMAT,
    DISCOVERY_JSON,
    DISCOVERY_MARKDOWN,
    DISCOVERY_VERSION,
    DTYPE_NAMES,
    SELECTIONS_DIR,
)

# a whole probe records every (op, dtype) cell: far more than a side file's 8 MiB
MAX_DISCOVERY_BYTES = 64 * 1024 * 1024
VERDICTS = frozenset({"works", "unsupported", "partial", "faulty", "untested"})
CLEAN = "works"
Support = bool | str


class DiscoveryProblem(ValueError):
    """A discovery file the scorecard cannot use; the message says why."""


@dataclass(frozen=True)
class DtypeSupport:
    """One dtype of a discovery: the manifest's claim, the proposal, the op counts."""

    dtype: str
    claimed: Support
    proposed: Support
    probed: bool
    ops_probed: int  # ops with an executed sample in this dtype
    works: int
    unsupported: int  # no longer claimed, in OPS.exclude, or inexpressible
    kept: int
    has_evidence: bool


@dataclass(frozen=True)
class DiscoverySupport:
    """The discovery file the scorecard shows, or why it cannot show it."""

    json_file: str  # relative to the rendered results dir, POSIX separators
    markdown_file: str | None  # the page beside it, when there is one
    others: int  # further discovery files found, not shown
    subset: bool = False
    rows: tuple[DtypeSupport, ...] = ()
    unclean_ops: int = 0  # ops with a cell whose verdict is not "works"
    unclean_cells: int = 0
    problem: str | None = None


def discovery_files(root: Path) -> list[Path]:
    """The discovery files of a results root: the whole probe's first, then every
    subset probe's in path order (the file records no time to order them by)."""
    base = root / DISCOVERY_DIR
    whole = [base / DISCOVERY_JSON] if (base / DISCOVERY_JSON).is_file() else []
    selections = base / SELECTIONS_DIR
    subsets = (
        sorted(
            p / DISCOVERY_JSON
            for p in selections.iterdir()
            if (p / DISCOVERY_JSON).is_file()
        )
        if selections.is_dir()
        else []
    )
    return whole + subsets


def read_discovery(results_dir: Path, root: Path) -> DiscoverySupport | None:
    """The first of `root`'s discovery files, paths relative to `results_dir`, or
    None when there is none (or the directory cannot be listed)."""
    try:
        files = discovery_files(root)
    except OSError:
        return None
    if not files:
        return None
    path = files[0]
    shown = _relative(path, results_dir, root)
    page = path.with_name(DISCOVERY_MARKDOWN)
    found = DiscoverySupport(
        json_file=shown,
        markdown_file=_relative(page, results_dir, root) if page.is_file() else None,
        others=len(files) - 1,
    )
    try:
        doc = _load(path)
        rows = tuple(_row(d, i) for i, d in enumerate(_list(doc, "dtypes")))
        if len({r.dtype for r in rows}) != len(rows):
            raise DiscoveryProblem("'dtypes' names a dtype twice")
        unclean = _unclean(_list(doc, "cells"))
        subset = doc.get("subset", False)
        if not isinstance(subset, bool):
            raise DiscoveryProblem("'subset' is not true or false")
    except DiscoveryProblem as exc:
        return replace(found, problem=str(exc))
    return replace(
        found,
        subset=subset,
        rows=rows,
        unclean_ops=len({op for op, _ in unclean}),
        unclean_cells=len(unclean),
    )


def _relative(path: Path, results_dir: Path, root: Path) -> str:
    inside = path.relative_to(root).as_posix()
    # a subset run's results dir is <root>/selections/<name>/: two levels down
    return inside if results_dir == root else f"../../{inside}"


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DISCOVERY_BYTES + 1)
    except OSError as exc:
        raise DiscoveryProblem(f"cannot read ({exc.strerror})") from None
    if len(data) > MAX_DISCOVERY_BYTES:
        raise DiscoveryProblem(f"larger than {MAX_DISCOVERY_BYTES} bytes")
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise DiscoveryProblem("not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DiscoveryProblem(
            f"invalid JSON at line {exc.lineno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise DiscoveryProblem("JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise DiscoveryProblem("not a JSON object")
    if doc.get("format") != DISCOVERY_FORMAT or doc.get("version") != DISCOVERY_VERSION:
        raise DiscoveryProblem(
            f"not a {DISCOVERY_FORMAT} file of version {DISCOVERY_VERSION}"
        )
    return doc


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise DiscoveryProblem(f"'{key}' is not a list")
    return value


def _row(entry: Any, index: int) -> DtypeSupport:
    where = f"dtypes[{index}]"
    if not isinstance(entry, dict):
        raise DiscoveryProblem(f"{where} is not an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPE_NAMES:
        raise DiscoveryProblem(f"{where}.dtype is not a known dtype name")
    for key in ("claimed", "proposed"):
        if not isinstance(entry.get(key), bool | str):
            raise DiscoveryProblem(f"{where}.{key} is neither a bool nor a string")
    if not isinstance(entry.get("probed"), bool):
        raise DiscoveryProblem(f"{where}.probed is not true or false")
    ops = {}
    for key in ("works", "kept", "declared", "in_ops", "inexpressible", "untested"):
        value = entry.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DiscoveryProblem(f"{where}.{key} is not a list of op names")
        ops[key] = value
    unsupported = [*ops["declared"], *ops["in_ops"], *ops["inexpressible"]]
    # as discover's own table counts: untested ops executed nothing, so were not probed
    probed = {*ops["works"], *ops["kept"], *unsupported}
    return DtypeSupport(
        dtype=dtype,
        claimed=entry["claimed"],
        proposed=entry["proposed"],
        probed=entry["probed"],
        ops_probed=len(probed),
        works=len(ops["works"]),
        unsupported=len(unsupported),
        kept=len(ops["kept"]),
        has_evidence=bool(probed),
    )


def _unclean(cells: list[Any]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for index, cell in enumerate(cells):
        if not (
            isinstance(cell, dict)
            and isinstance(cell.get("op"), str)
            and isinstance(cell.get("dtype"), str)
            and isinstance(cell.get("verdict"), str)
            and cell["verdict"] in VERDICTS
        ):
            raise DiscoveryProblem(
                f"cells[{index}] lacks an op, a dtype or a known verdict"
            )
        if cell["verdict"] != CLEAN:
            found.add((cell["op"], cell["dtype"]))
    return found
