"""The result artifact: metadata, executed results, not_run accounting and diagnostics.

`encode_artifact` picks the compact columnar encoding when it is smaller than the plain
one and appends the content digest (`integrity`); `decode_artifact` accepts either
encoding, refuses compact tables the encoder could not have written and a case id
recorded twice, and restores exactly what was encoded. Checking the digest and the counts is the loader's job,
since only it has the whole file.

Format 2 added the digest. Format 1 artifacts (no digest) still load, with every
other check, so results written before it stay readable. Format 3 added the
compact codec ``shared`` (`shared_codec`: a column of JSON objects stored
once per distinct value); formats 1 and 2 load as before, and a reader of format
2 refuses a format 3 file by its version rather than by an unknown codec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from torchcts_schema import codec
from torchcts_schema.errors import ArtifactError
from torchcts_schema.integrity import DIGEST_KEY, artifact_digest, check_block
from torchcts_schema.records import CaseRecord, JsonDict, RunMetadata
from torchcts_schema.shared_codec import SharedTexts
from torchcts_schema.vocabulary import Status

RESULT_FORMAT = "torchcts-result"
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# Plain JSON repeats ~20 key names (>= 250 bytes) in every record; compact pays a fixed
# ~1.5 kB of column specs and never stores a value longer than plain does. From this
# many records on compact is always smaller, so auto skips building the plain text.
ALWAYS_COMPACT_FROM = 16


@dataclass
class RunArtifact:
    """One run's result, the source of truth every report is rendered from."""

    metadata: RunMetadata
    results: list[CaseRecord] = field(default_factory=list)
    not_run: list[CaseRecord] = field(default_factory=list)
    diagnostics: JsonDict = field(default_factory=dict)

    @classmethod
    def from_records(
        cls,
        metadata: RunMetadata,
        records: list[CaseRecord],
        diagnostics: JsonDict | None = None,
    ) -> RunArtifact:
        """Split records into executed results and not_run accounting."""
        results = [r for r in records if r.status is not Status.NOT_RUN]
        not_run = [r for r in records if r.status is Status.NOT_RUN]
        return cls(metadata, results, not_run, dict(diagnostics or {}))

    @property
    def records(self) -> list[CaseRecord]:
        """Every record, executed first, then not_run."""
        return [*self.results, *self.not_run]


def encode_artifact(
    artifact: RunArtifact,
    *,
    encoding: str = "auto",
    extra: JsonDict | None = None,
    known: SharedTexts | None = None,
) -> str:
    """JSON text of the artifact; ``auto`` keeps whichever encoding is smaller.

    `extra` adds top-level keys (the snapshot's journal position) without a re-parse;
    `known`: the shared values' texts noted as the records were journaled.
    """
    head: JsonDict = {
        "format": RESULT_FORMAT,
        "format_version": FORMAT_VERSION,
        **(extra or {}),
    }
    meta = artifact.metadata.to_dict()
    if encoding == "compact" or (
        encoding == "auto"
        and len(artifact.results) + len(artifact.not_run) >= ALWAYS_COMPACT_FROM
    ):
        return _compact(head, artifact, known)
    plain = _dumps(
        {
            **head,
            "encoding": "plain",
            "metadata": meta,
            "results": [r.to_dict() for r in artifact.results],
            "not_run": [r.to_dict() for r in artifact.not_run],
            "diagnostics": artifact.diagnostics,
        }
    )
    if encoding == "plain":
        return _with_digest(plain)
    compact = _compact_text(head, artifact, known)
    return _with_digest(compact if len(compact) < len(plain) else plain)


def _with_digest(text: str) -> str:
    """`text` (one JSON object and a newline) with its digest as the last key."""
    # digested from the parsed text, as a reader will, so that keys json turns into
    # strings (an int key in diagnostics) cannot make the two canonical forms differ
    digest = artifact_digest(json.loads(text))
    return f'{text[:-2]},"{DIGEST_KEY}":"{digest}"}}\n'


def _compact(head: JsonDict, artifact: RunArtifact, known: SharedTexts | None) -> str:
    return _with_digest(_compact_text(head, artifact, known))


def _compact_text(
    head: JsonDict, artifact: RunArtifact, known: SharedTexts | None
) -> str:
    return _dumps(
        {
            **head,
            "encoding": "compact",
            "metadata": artifact.metadata.to_dict(),
            "results": codec.encode_records(artifact.results, known),
            "not_run": codec.encode_records(artifact.not_run, known),
            "diagnostics": artifact.diagnostics,
        }
    )


def decode_artifact(data: Any, where: str) -> RunArtifact:
    """Build an artifact from parsed JSON, naming `where` in every error."""
    if not isinstance(data, dict) or data.get("format") != RESULT_FORMAT:
        raise ArtifactError(
            where, f"not a TorchCTS result (format is not '{RESULT_FORMAT}')"
        )
    version = data.get("format_version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise ArtifactError(
            where,
            f"unknown format_version {version!r:.40}; this TorchCTS reads "
            f"{', '.join(map(str, READABLE_VERSIONS[:-1]))} and "
            f"{READABLE_VERSIONS[-1]}",
        )
    encoding = data.get("encoding")
    try:
        metadata = RunMetadata.from_dict(data["metadata"])
        if encoding == "plain":
            results = [CaseRecord.from_dict(r) for r in data["results"]]
            not_run = [CaseRecord.from_dict(r) for r in data["not_run"]]
        elif encoding == "compact":
            check_block(data["results"])
            check_block(data["not_run"])
            results = codec.decode_records(data["results"])
            not_run = codec.decode_records(data["not_run"])
        else:
            raise ArtifactError(where, f"unknown encoding {encoding!r}")
        diagnostics = data.get("diagnostics", {})
    except ArtifactError as exc:
        raise ArtifactError(where, exc.problem) from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ArtifactError(where, f"malformed {encoding} artifact ({exc!r})") from None
    _refuse_duplicate_ids([*results, *not_run], where)
    return RunArtifact(metadata, results, not_run, diagnostics)


def _refuse_duplicate_ids(records: list[CaseRecord], where: str) -> None:
    """One record per case: a writer keys its records by case id, so a second one
    is a crafted or corrupted file, and every reader would count that case twice.
    (A journal may hold a later line for a case, a resumed run's; its reader folds
    those into one record before an artifact is built, so it never gets here.)"""
    seen: set[str] = set()
    for record in records:
        if record.case_id in seen:
            raise ArtifactError(
                where, f"case id {record.case_id!r} has more than one record"
            )
        seen.add(record.case_id)


def _dumps(obj: JsonDict) -> str:
    # ASCII escapes keep lone surrogates from exception messages writable as UTF-8
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True) + "\n"
