"""The hostile archive pack: crafted submissions and the one line each must produce.

Each `Hostile` builds its archive from a good one (or from nothing) and names the
rejection line `verify` must print for it, or None where the archive must be accepted
(an honest archive written by another tool). `tests/hostile/README.md` lists them.
Bombs are written by `raw_zip`, which deflates each distinct payload once, so a
2,000-member bomb takes milliseconds to build.
"""

from __future__ import annotations

import json
import stat
import struct
import unicodedata
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evidence_builders import CRASH_EVIDENCE, RUN_KEY
from torchcts_evidence import Limits, sha256_of
from torchcts_schema import (
    CaseRecord,
    RunArtifact,
    Status,
    count_statuses,
    decode_artifact,
    encode_artifact,
)

MIB = 2**20
ZEROS = b"\0" * MIB
RESULT = f"results/{RUN_KEY}_latest.json"
JOURNAL = f"results/{RUN_KEY}_journal.jsonl"
ESCAPES = "Linux\x1b]0;owned\x07\x1b[2J\u202e"
Member = tuple[str, bytes, int]  # name, data, Unix mode (0: no type bits)


def read_members(archive: Path) -> list[Member]:
    """The members of an archive with their modes."""
    with zipfile.ZipFile(archive) as zf:
        return [(i.filename, zf.read(i), i.external_attr >> 16) for i in zf.infolist()]


def raw_zip(path: Path, members: list[Member]) -> Path:
    """A zip written byte by byte: any name, any mode, duplicate payloads shared."""
    deflated: dict[bytes, tuple[bytes, int]] = {}
    local, central = bytearray(), bytearray()
    for name, data, mode in members:
        if data not in deflated:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            deflated[data] = (packer.compress(data) + packer.flush(), zlib.crc32(data))
        body, crc = deflated[data]
        raw = name.encode("utf-8")
        flags = 0x800  # names are UTF-8
        sizes = struct.pack("<III", crc, len(body), len(data))
        central += struct.pack("<IHHHHHH", 0x02014B50, 0x314, 20, flags, 8, 0, 33)
        entry = struct.pack("<HHHHHII", len(raw), 0, 0, 0, 0, mode << 16, len(local))
        central += sizes + entry + raw
        local += struct.pack("<IHHHHH", 0x04034B50, 20, flags, 8, 0, 33)
        local += sizes + struct.pack("<HH", len(raw), 0) + raw + body
    end = struct.pack(
        "<IHHHHIIH",
        0x06054B50,
        0,
        0,
        len(members),
        len(members),
        len(central),
        len(local),
        0,
    )
    path.write_bytes(bytes(local) + bytes(central) + end)
    return path


def edit_submission(
    members: list[Member], edit: Callable[[dict[str, Any]], None]
) -> list[Member]:
    """The members with SUBMISSION.json edited (its own hash is never listed)."""
    out = []
    for name, data, mode in members:
        if name == "SUBMISSION.json":
            body = json.loads(data)
            edit(body)
            data = json.dumps(body, ensure_ascii=False).encode()
        out.append((name, data, mode))
    return out


def listed(members: list[Member], extra: list[Member]) -> list[Member]:
    """Add members listed with their true hashes, so only the tested flaw remains."""

    def add(body: dict[str, Any]) -> None:
        for name, data, _mode in extra:
            body["files"][name] = {"sha256": sha256_of(data), "bytes": len(data)}

    return [*edit_submission(members, add), *extra]


def relisted(members: list[Member], changed: dict[str, bytes]) -> list[Member]:
    """`changed` members swapped in and listed with their true hashes and sizes."""

    def relist(body: dict[str, Any]) -> None:
        for name, data in changed.items():
            body["files"][name] = {"sha256": sha256_of(data), "bytes": len(data)}

    return [
        (name, changed.get(name, data), mode)
        for name, data, mode in edit_submission(members, relist)
    ]


def forge_history(
    good: Path, out: Path, edit: Callable[[CaseRecord], CaseRecord]
) -> Path:
    """The canonical artifact re-encoded with `edit` applied to every record, its
    digest and counts recomputed, and SUBMISSION.json's counts, executed_cases and
    hashes made to match: only the journal and crash records are left as they were."""
    members = read_members(good)
    data = dict((n, d) for n, d, _m in members)
    name = json.loads(data["SUBMISSION.json"])["canonical_artifact"]
    artifact = decode_artifact(json.loads(data[name]), name)
    records = [edit(r) for r in artifact.records]
    meta = replace(artifact.metadata, counts=count_statuses(records))
    forged = RunArtifact.from_records(meta, records, artifact.diagnostics)
    text = encode_artifact(forged).encode()
    counts: dict[str, int] = {}
    for record in records:
        counts[record.status.value] = counts.get(record.status.value, 0) + 1

    def claim(body: dict[str, Any]) -> None:
        body["counts"] = dict(sorted(counts.items()))
        body["executed_cases"] = sum(
            r.status not in (Status.NOT_RUN, Status.SKIPPED) for r in records
        )

    return raw_zip(out, relisted(edit_submission(members, claim), {name: text}))


def passed(record: CaseRecord) -> CaseRecord:
    """`record` as a pass: every executed case that did not pass now did."""
    if record.status in (Status.PASSED, Status.NOT_RUN, Status.SKIPPED):
        return record
    return replace(
        record, status=Status.PASSED, crash=None, mismatch=None, next_fix=None
    )


def _journal_of_another_run(good: Path, out: Path) -> Path:
    members = read_members(good)
    journal = dict((n, d) for n, d, _m in members)[JOURNAL]
    other = journal.replace(b'"started_at":"2026-11-30T01:00:00Z"', b'"started_at":"x"')
    return raw_zip(out, relisted(members, {JOURNAL: other}))


def _without_crash_record(good: Path, out: Path) -> Path:
    crash = f"results/{CRASH_EVIDENCE}"

    def unlist(body: dict[str, Any]) -> None:
        del body["files"][crash]

    kept = [m for m in read_members(good) if m[0] != crash]
    return raw_zip(out, edit_submission(kept, unlist))


@dataclass(frozen=True)
class Hostile:
    """One crafted input: how to build it and what `verify` must say about it."""

    name: str
    build: Callable[[Path, Path], Path]  # (good archive, output path) -> archive
    rejection: str | None  # a substring of one problem line; None: must be accepted
    limits: Limits | None = None


def _bomb(count: int) -> Callable[[Path, Path], Path]:
    return lambda good, out: raw_zip(
        out, [(f"results/b{i:04d}.bin", ZEROS, 0o100644) for i in range(count)]
    )


def _claim(key: str, value: Any) -> Callable[[Path, Path], Path]:
    return lambda good, out: raw_zip(
        out, edit_submission(read_members(good), lambda b: b.update({key: value}))
    )


def _extra(*extra: Member) -> Callable[[Path, Path], Path]:
    return lambda good, out: raw_zip(out, listed(read_members(good), list(extra)))


def _writestr(good: Path, out: Path) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as zf:
        for name, data, _mode in read_members(good):
            zf.writestr(name, data)  # a str name: mode 0o600, no file-type bits
    return out


def _typeless(good: Path, out: Path) -> Path:
    return raw_zip(out, [(n, d, 0) for n, d, _m in read_members(good)])


CAFE_NFC = unicodedata.normalize("NFC", "results/café.txt")
CAFE_NFD = unicodedata.normalize("NFD", "results/café.txt")
REG = 0o100644

HOSTILE = [
    Hostile(
        "bomb: 2,000 members of 1 MiB of zeros, default bounds",
        _bomb(2000),
        "over all members (limit 200:1; a zip bomb?)",
    ),
    Hostile(
        "bomb: 300 members of 1 MiB of zeros, total bound 64 MiB",
        _bomb(300),
        "314572800 bytes uncompressed in all (limit 67108864)",
        Limits(max_total_bytes=64 * MIB),
    ),
    Hostile(
        "NFC/NFD pair of one name",
        _extra((CAFE_NFC, b"a", REG), (CAFE_NFD, b"b", REG)),
        "under Unicode normalisation (NFC)",
    ),
    Hostile(
        "NFD name and upper-case NFC name",
        _extra(
            (unicodedata.normalize("NFC", "results/CAFÉ.txt"), b"a", REG),
            (CAFE_NFD, b"b", REG),
        ),
        "only in case (or in case and Unicode normalisation)",
    ),
    Hostile(
        "names differing only in case",
        _extra(("results/A.txt", b"a", REG), ("results/a.txt", b"b", REG)),
        "only in case",
    ),
    Hostile("written by ZipFile.writestr (mode 0o600, no type bits)", _writestr, None),
    Hostile("no mode bits at all", _typeless, None),
    Hostile(
        "claim: os",
        _claim("os", "Windows-11"),
        f"SUBMISSION.json: os 'Windows-11' differs from the run's 'Linux-6.1-x86_64' in {RESULT}",
    ),
    Hostile(
        "claim: python",
        _claim("python", "3.99.0"),
        "SUBMISSION.json: python '3.99.0' differs from the run's '3.11.7'",
    ),
    Hostile(
        "claim: command",
        _claim("command", "torchcts-run --level 9"),
        "SUBMISSION.json: command 'torchcts-run --level 9' differs from the run's "
        "'torchcts-run --manifest manifests/simdev.py'",
    ),
    Hostile(
        "claim: hardware key",
        _claim("hardware_key", "nvidia-h200"),
        "SUBMISSION.json: hardware_key 'nvidia-h200' differs from the run's "
        "'x86-64-2cpu-24gb'",
    ),
    Hostile(
        "claim: run key",
        _claim("run_key", "cuda_nvidia-h200"),
        f"SUBMISSION.json: run_key 'cuda_nvidia-h200' differs from the run key "
        f"'{RUN_KEY}' of {RESULT}",
    ),
    Hostile(
        "claim: torch version",
        _claim("torch_version", "2.99.0"),
        "SUBMISSION.json: torch_version '2.99.0' differs from the run's '2.13.0+cpu'",
    ),
    Hostile(
        "claim: counts",
        _claim("counts", {"passed": 4}),
        "SUBMISSION.json: counts {'passed': 4} differs from the run's",
    ),
    Hostile(
        "claim: completed as 1, not true",
        _claim("completed_normally", 1),
        "SUBMISSION.json: 'completed_normally' is not true or false (found a number)",
    ),
    Hostile(
        "result named by a list",
        _claim("result", [RESULT]),
        "SUBMISSION.json: 'result' is not a member name under results/ (found a list)",
    ),
    Hostile(
        "latest named by a list",
        _claim("latest", [RESULT]),
        "SUBMISSION.json: 'latest' is not null or a name under results/ (found a list)",
    ),
    Hostile(
        "canonical artifact named by an object",
        _claim("canonical_artifact", {RESULT: 1}),
        "SUBMISSION.json: 'canonical_artifact' is not null or a name under results/ "
        "(found an object)",
    ),
    Hostile(
        "scrubbed as a number",
        _claim("scrubbed", 5),
        "SUBMISSION.json: 'scrubbed' is not a list of member names (found a number)",
    ),
    Hostile(
        "format_version true (equal to 1 in Python)",
        _claim("format_version", True),
        "SUBMISSION.json: unknown format_version True (this torchcts-evidence reads 1)",
    ),
    Hostile(
        "history re-encoded with every failing case passed, digest and claims redone",
        lambda good, out: forge_history(good, out, passed),
        f"{JOURNAL}: case 'opinfo/sub/forward/float32/0' is failed in the journal but "
        f"passed in {RESULT} (2 cases differ)",
    ),
    Hostile(
        "the journal of another run",
        _journal_of_another_run,
        f"{JOURNAL}: the journal of another run ('{RUN_KEY}' started 'x') than "
        f"{RESULT}",
    ),
    Hostile(
        "a crashed case's crash record removed and unlisted",
        _without_crash_record,
        f"{RESULT}: case 'opinfo/mul/forward/float32/0' names its crash record "
        f"'results/{CRASH_EVIDENCE}', which the archive does not hold",
    ),
    Hostile(
        "escape sequences in a claim",
        _claim("os", ESCAPES),
        "SUBMISSION.json: os 'Linux\\x1b]0;owned\\x07\\x1b[2J\\u202e' differs",
    ),
    Hostile(
        "escape sequences in a member name",
        _extra(("results/\x1b[2Jx", b"x", REG)),
        "'results/\\x1b[2Jx': control or bidi-override character in name",
    ),
    Hostile(
        "traversal: ..",
        _extra(("results/../../x", b"x", REG)),
        "'..' escapes the archive",
    ),
    Hostile(
        "traversal: absolute", _extra(("/etc/x", b"x", REG)), "'/etc/x': absolute path"
    ),
    Hostile(
        "traversal: drive letter", _extra(("C:/x", b"x", REG)), "'C:/x': absolute path"
    ),
    Hostile(
        "traversal: backslash",
        _extra(("results\\..\\x", b"x", REG)),
        "backslash in name",
    ),
    Hostile(
        "symbolic link",
        _extra(("results/link", b"/etc/passwd", stat.S_IFLNK | 0o777)),
        "'results/link': symbolic link (links are not accepted)",
    ),
    Hostile(
        "FIFO member",
        _extra(("results/fifo", b"", stat.S_IFIFO | 0o644)),
        "'results/fifo': not a regular file (mode 0o10644)",
    ),
]
