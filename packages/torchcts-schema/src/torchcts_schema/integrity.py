"""Local integrity of a result artifact: its digest, its compact tables and its counts.

The digest is ``sha256:`` and the hex SHA-256 of the artifact's canonical JSON: every
top-level key but ``digest`` itself, keys sorted, no spaces, ASCII escapes. It is
computed over parsed content, so a file re-indented or re-escaped by another JSON tool
keeps its digest, while any changed value (a flipped status index) does not. It tells
damage from a whole file; it is no signature, since anyone can recompute it.

The compact checks refuse what the encoder never writes: an interned or shared
column whose index is not an integer in range (``-1`` included), or whose table
repeats an entry (a shared one: two entries with the same JSON text), holds a
non-string (shared: a null, or a value that is not JSON) or has an entry no row
uses.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from torchcts_schema.errors import ArtifactError
from torchcts_schema.records import CaseRecord, JsonDict, count_statuses
from torchcts_schema.shared_codec import SHARED_KEY

DIGEST_KEY = "digest"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def artifact_digest(data: JsonDict) -> str:
    """``sha256:<hex>`` of `data`'s canonical JSON, its own ``digest`` key left out."""
    body = {k: v for k, v in data.items() if k != DIGEST_KEY}
    canonical = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def check_digest(data: JsonDict, where: str) -> None:
    """Refuse an artifact whose recorded digest is missing, malformed or not its own."""
    recorded = data.get(DIGEST_KEY)
    if recorded is None:
        raise ArtifactError(where, "has no digest (format 2 artifacts carry one)")
    if not isinstance(recorded, str) or not _DIGEST.fullmatch(recorded):
        raise ArtifactError(where, f"digest {recorded!r:.80} is not sha256:<64 hex>")
    if artifact_digest(data) != recorded:
        raise ArtifactError(
            where, "digest mismatch: the content was changed or damaged after writing"
        )


def redigested(before: bytes, after: bytes) -> bytes:
    """`after`, the JSON text of artifact `before` changed on purpose (host identity
    scrubbed by an archive), carrying the digest of its new content.

    Only an intact `before` (its recorded digest its own) is digested again: a file
    damaged before the change keeps its stale digest, so verification still tells
    the damage. Text that is not a JSON object with a digest comes back unchanged.
    The digest is replaced where it stands when it stands once; otherwise the
    object is written again (the digest is of parsed content, not of the layout).
    """
    try:
        old, new = json.loads(before), json.loads(after)
    except ValueError:  # UnicodeDecodeError included
        return after
    if not isinstance(old, dict) or not isinstance(new, dict):
        return after
    recorded = old.get(DIGEST_KEY)
    if not isinstance(recorded, str) or artifact_digest(old) != recorded:
        return after
    fresh = artifact_digest(new)
    if after.count(recorded.encode("ascii")) == 1:
        return after.replace(recorded.encode("ascii"), fresh.encode("ascii"))
    new[DIGEST_KEY] = fresh
    return (json.dumps(new, separators=(",", ":"), ensure_ascii=True) + "\n").encode()


def check_counts(counts: dict[str, int], records: list[CaseRecord], where: str) -> None:
    """Refuse metadata counts that disagree with the records (empty: none stated)."""
    if not counts:
        return
    actual = count_statuses(records)
    wrong = sorted(
        name
        for name in {*counts, *actual}
        if counts.get(name, 0) != actual.get(name, 0)
    )
    if wrong:
        listed = ", ".join(
            f"{name} {counts.get(name, 0)} vs {actual.get(name, 0)}"
            for name in wrong[:4]
        )
        raise ArtifactError(
            where, f"metadata counts disagree with the records ({listed})"
        )


def check_block(block: Any) -> None:
    """Refuse a compact block the encoder could not have written (see the docstring).

    Only the consistency `codec.decode_records` leaves to the encoder is checked here;
    a malformed block is left to the decoder, which words its own errors.
    """
    if not isinstance(block, dict):
        return
    count = block.get("count")
    if "count" in block and (type(count) is not int or count < 0):
        raise ArtifactError(None, f"compact block count {count!r:.40} is not a size")
    columns = block.get("columns")
    if not isinstance(columns, dict):
        return
    for name, spec in columns.items():
        codec = spec.get("codec") if isinstance(spec, dict) else None
        if codec in ("intern", "shared"):
            _check_table(str(name), codec, spec.get("table"), spec.get("index"))


def _check_table(name: str, codec: str, table: Any, index: Any) -> None:
    if not isinstance(table, list) or not isinstance(index, list):
        raise ArtifactError(None, f"column {name!r} has no table and index lists")
    if codec == "intern":
        if not set(map(type, table)) <= {str}:
            raise ArtifactError(None, f"column {name!r} table holds a non-string")
        texts = table
    else:
        if None in table:  # a null row is a null index, never an entry
            raise ArtifactError(None, f"column {name!r} table holds a null")
        try:
            texts = list(map(SHARED_KEY, table))
        except (TypeError, ValueError, RecursionError):
            raise ArtifactError(
                None, f"column {name!r} table holds a value that is not JSON"
            ) from None
    if len(set(texts)) != len(texts):
        raise ArtifactError(None, f"column {name!r} table repeats an entry")
    # `type(...) is int` on the distinct types keeps bools (True indexes row 1) out
    if not set(map(type, index)) <= {int, type(None)}:
        raise ArtifactError(
            None, f"column {name!r} has an index that is not an integer"
        )
    used = set(index)
    used.discard(None)
    for bad in (min(used, default=0), max(used, default=0)):
        if not 0 <= bad < len(table) and used:
            raise ArtifactError(
                None,
                f"column {name!r} index {bad} is out of range "
                f"for its {len(table)}-entry table",
            )
    if len(used) != len(table):
        unused = next(i for i in range(len(table)) if i not in used)
        raise ArtifactError(
            None,
            f"column {name!r} table entry {unused} ({table[unused]!r:.40}) "
            "is used by no row",
        )
