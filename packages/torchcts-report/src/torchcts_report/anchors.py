"""Stable HTML anchors: ids for headings, clusters and crashed cases, and the grid's links.

Every non-passed grid cell links to where the report explains it, so the ids must not
change between renders of the same artifact or between runs that share a problem: a
cluster's id comes from what defines it (status, op family, dtype, signature), a case's
from its case id, a heading's from its title without the count after the colon.
"""

from __future__ import annotations

import hashlib
import re

from markdown_it.token import Token
from torchcts_schema import Status

from torchcts_report.clusters import Cluster
from torchcts_report.summary import RecordSummary
from torchcts_report.tallies import NONE_LABEL
from torchcts_report.text import clean

_NOT_WORD = re.compile(r"[^a-z0-9]+")
_SEVERITY = (Status.CRASHED, Status.FAILED, Status.ERROR, Status.UNSUPPORTED)
# where cells of statuses without a cluster are explained (heading ids, see `slug`)
SECTION_OF: dict[Status, str] = {
    Status.SKIPPED: "6-missing-evidence",
    Status.NOT_RUN: "not-run-by-reason",
}
CLUSTERS_SECTION = "failure-clusters"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def cluster_anchor(cluster: Cluster) -> str:
    """The id of a cluster's row: the same for the same problem in any run."""
    key = "|".join((cluster.status.value, cluster.family, cluster.dtype))
    return f"cluster-{_digest(key + '|' + cluster.signature)}"


def case_anchor(case_id: str) -> str:
    """The id of a case's crash detail: readable, and unique through a digest."""
    readable = _NOT_WORD.sub("-", case_id.lower()).strip("-")[:60]
    return f"case-{readable}-{_digest(case_id)[:6]}"


def slug(title: str) -> str:
    """A heading's id: its title before any colon, lowercased, dashes between words."""
    return _NOT_WORD.sub("-", title.split(":", 1)[0].lower()).strip("-") or "section"


def set_heading_ids(tokens: list[Token], used: set[str]) -> None:
    """Give every heading an id: crash details their case's, others their slug."""
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[index + 1]
        codes = [c.content for c in inline.children or [] if c.type == "code_inline"]
        if inline.content.startswith("Crash of ") and codes:
            value = case_anchor(codes[0])
        else:
            value = slug(inline.content)
        unique, n = value, 1
        while unique in used:
            n += 1
            unique = f"{value}-{n}"
        used.add(unique)
        token.attrSet("id", unique)


def set_row_ids(tokens: list[Token], ids: list[str]) -> None:
    """Give the body rows of the first table in `tokens` the ids in order."""
    in_body = False
    remaining = iter(ids)
    for token in tokens:
        if token.type == "tbody_open":
            in_body = True
        elif token.type == "tbody_close":
            return
        elif in_body and token.type == "tr_open":
            value = next(remaining, None)
            if value is None:
                return
            token.attrSet("id", value)


def cell_links(
    summary: RecordSummary,
    clusters: list[Cluster],
    listed: int,
    crash_details: set[str],
) -> dict[tuple[str, str], str]:
    """(op, dtype) of each grid cell with a failing case -> the anchor to follow.

    The cell's most severe case decides: a crash with a detail section links to it,
    otherwise the case's cluster row (the first `listed` clusters have rows; the
    others link to the cluster section).
    """
    position: dict[str, tuple[int, str]] = {}
    for index, cluster in enumerate(clusters):
        target = cluster_anchor(cluster) if index < listed else CLUSTERS_SECTION
        for case_id in cluster.case_ids:
            position.setdefault(case_id, (index, target))
    best: dict[tuple[str, str], tuple[int, int, str]] = {}
    for record in summary.executed:
        if record.status not in _SEVERITY or record.case_id not in position:
            continue
        key = (clean(record.op) or NONE_LABEL, clean(record.dtype or NONE_LABEL))
        index, target = position[record.case_id]
        if record.status is Status.CRASHED and record.case_id in crash_details:
            target = case_anchor(record.case_id)
        rank = (_SEVERITY.index(record.status), index, target)
        if key not in best or rank < best[key]:
            best[key] = rank
    return {key: target for key, (_, _, target) in best.items()}
