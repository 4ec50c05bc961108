"""Where a run writes: the results dir for a full run, its own folder for a subset.

A rerun of one case, an ``--op`` slice, a ``-k`` selection, a ``--deselect`` or a
``--shard`` (one part of a run that ``torchcts-report merge`` makes whole) must never
replace the full run's ``<key>_latest.json``, reports or what ``make
submission-archive`` picks. So a run that selects part of the manifest's cases
writes a complete results directory of its own under ``<results>/selections/<name>/``,
named after its selection (the same selection always lands in the same folder, so
its history there grows run after run). The name is readable and path-safe; a long selection keeps a
readable prefix and a digest of the whole.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from torchcts_schema import RECHECK_SELECTION, SELECTIONS_DIR

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")
_DOTS = re.compile(r"\.{2,}")
MAX_NAME = 60
USER_COMMAND_ENV = "TORCHCTS_USER_COMMAND"  # what the user typed (torchcts-run, make)


def subset_folder(
    *,
    node_ids: Sequence[str],
    op_globs: Sequence[str],
    dtypes: Sequence[str],
    suites: Sequence[str],
    keyword: str,
    markexpr: str,
    deselect: Sequence[str] = (),
    shard: tuple[int, int] | None = None,
    recheck: bool = False,
) -> str | None:
    """``selections/<name>`` for a subset run, None for a run of the whole manifest.

    A recheck of the exclusions always has its own folder
    (``selections/recheck-exclusions[_<filters>]``): what it runs is what the full
    run declines, and its evidence must never stand in for the full run's.
    """
    parts: list[str] = [RECHECK_SELECTION] if recheck else []
    if node_ids:
        parts.append("case-" + "+".join(n.split("::", 1)[-1] for n in node_ids))
    for label, values in (("op", op_globs), ("dtype", dtypes), ("suite", suites)):
        if values:
            parts.append(f"{label}-" + "+".join(values))
    if keyword:
        parts.append(f"k-{keyword}")
    if markexpr:
        parts.append(f"m-{markexpr}")
    if deselect:
        parts.append("deselect-" + "+".join(n.split("::", 1)[-1] for n in deselect))
    if shard:
        parts.append(f"shard-{shard[0]}of{shard[1]}")
    if not parts:
        return None
    whole = "_".join(parts)
    name = _UNSAFE.sub("-", whole.replace("/", "."))
    name = _DOTS.sub(".", name).strip("-.") or "selection"  # never "." or ".."
    if len(name) > MAX_NAME or name != whole.replace("/", "."):
        digest = hashlib.sha256(whole.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('-.')}-{digest}"
    return f"{SELECTIONS_DIR}/{name}"


__all__ = ["USER_COMMAND_ENV", "subset_folder"]
