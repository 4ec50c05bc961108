"""Structural checks of a zip archive, and bounded streaming reads of its members.

From the central directory alone, before anything is decompressed: names that escape
(absolute, ``..``, backslashes, control characters), links and other non-regular members, encryption,
unknown compression, names that collide (exactly, under Unicode NFC normalisation, or
by case), file/directory clashes, oversized members or totals, and compression ratios
that betray a zip bomb, per member and over all members together. Members are then
read in chunks, never whole, and never past the size they declare.
"""

from __future__ import annotations

import hashlib
import stat
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from torchcts_schema import MAX_MANIFEST_BYTES, for_terminal

CHUNK_BYTES = 2**20


@dataclass(frozen=True)
class Limits:
    """What a reviewer's machine is willing to unpack."""

    max_members: int = 20_000
    max_member_bytes: int = 512 * 2**20
    max_total_bytes: int = 2 * 2**30
    max_ratio: float = 200.0
    # A member or archive this small may compress well without harm; past it, the
    # ratio is checked (for the whole archive too, so many small members add up).
    # Members are streamed, so inflating this much costs well under a second and no
    # memory; below it a ratio proves nothing: a backend message of megabytes, repeated
    # in journal, history and reports, deflates past 400:1 in an honest archive.
    ratio_floor_bytes: int = 128 * 2**20
    max_submission_bytes: int = 16 * 2**20
    max_manifest_bytes: int = MAX_MANIFEST_BYTES  # what a run would read
    # a repro script is read to look for host paths; the runner's are tens of KiB
    # (literal tensors hold at most 256 elements)
    max_repro_bytes: int = 2**20


def structure_problems(infos: list[zipfile.ZipInfo], limits: Limits) -> list[str]:
    """Every structural problem, found from the central directory alone."""
    if len(infos) > limits.max_members:
        return [f"{len(infos)} members (more than {limits.max_members})"]
    problems = _collisions(infos)
    total = compressed = 0
    for info in infos:
        name = info.filename
        problems += [f"{name!r}: {p}" for p in _name_problems(name)]
        problems += [f"{name!r}: {p}" for p in _kind_problems(info)]
        if info.flag_bits & 0x1:
            problems.append(f"{name!r}: encrypted member")
        if info.is_dir():
            continue
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            problems.append(f"{name!r}: unsupported compression {info.compress_type}")
        if info.file_size > limits.max_member_bytes:
            problems.append(
                f"{name!r}: {info.file_size} bytes uncompressed (limit "
                f"{limits.max_member_bytes})"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            problems.append(
                f"{name!r}: compression ratio {ratio:.0f}:1 (limit "
                f"{limits.max_ratio:.0f}:1; a zip bomb?)"
            )
        total += info.file_size
        compressed += info.compress_size
    problems += _file_and_directory(infos)
    if total > limits.max_total_bytes:
        problems.append(
            f"{total} bytes uncompressed in all (limit {limits.max_total_bytes})"
        )
    ratio = total / max(compressed, 1)
    if total > limits.ratio_floor_bytes and ratio > limits.max_ratio:
        problems.append(
            f"{len(infos)} members expand {compressed} bytes to {total}: compression "
            f"ratio {ratio:.0f}:1 over all members (limit {limits.max_ratio:.0f}:1; "
            "a zip bomb?)"
        )
    return problems


def _collisions(infos: list[zipfile.ZipInfo]) -> list[str]:
    # which one would be reviewed, and which one would a case-insensitive or
    # normalising file system (macOS, Windows) keep?
    problems: list[str] = []
    exact: set[str] = set()
    normal: dict[str, str] = {}
    folded: dict[str, str] = {}
    for info in infos:
        name = info.filename
        nfc = unicodedata.normalize("NFC", name)
        fold = unicodedata.normalize("NFC", nfc.casefold())
        if name in exact:
            problems.append(f"{name!r}: duplicate member name")
        elif nfc in normal:
            problems.append(
                f"{name!r}: equals {normal[nfc]!r} under Unicode normalisation (NFC)"
            )
        elif fold in folded:
            problems.append(
                f"{name!r}: differs from {folded[fold]!r} only in case (or in case "
                "and Unicode normalisation)"
            )
        exact.add(name)
        normal.setdefault(nfc, name)
        folded.setdefault(fold, name)
    return problems


def _kind_problems(info: zipfile.ZipInfo) -> list[str]:
    # Only the file-type bits of a Unix mode say what a member is. ZipFile.writestr
    # writes no type bits (mode 0o600) and other tools write none at all: a member
    # without them is a regular file. A symlink, device, FIFO or socket is refused.
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if info.create_system != 3 or kind in (0, stat.S_IFREG):
        return []
    if kind == stat.S_IFLNK:
        return ["symbolic link (links are not accepted)"]
    if kind == stat.S_IFDIR and info.is_dir():
        return []
    return [f"not a regular file (mode {oct(mode)})"]


def _file_and_directory(infos: list[zipfile.ZipInfo]) -> list[str]:
    problems = []
    files = {i.filename for i in infos if not i.is_dir()}
    for name in sorted(files):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in files:
                problems.append(
                    f"{parent!r}: is both a file and the directory of {name!r}"
                )
    return problems


def _name_problems(name: str) -> list[str]:
    if not name or "\x00" in name:
        return ["empty or NUL in name"]
    problems = []
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        problems.append("absolute path")
    if "\\" in name:
        problems.append("backslash in name")
    if for_terminal(name) != name or "\n" in name:
        problems.append("control or bidi-override character in name")
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        problems.append("'..' escapes the archive")
    return problems


def stream_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, sink: Callable[[bytes], object]
) -> None:
    """Feed a member to `sink` chunk by chunk, refusing more or less than declared."""
    seen = 0
    with zf.open(info) as fh:
        while chunk := fh.read(CHUNK_BYTES):
            seen += len(chunk)
            if seen > info.file_size:
                raise ValueError(f"holds more than the {info.file_size} bytes declared")
            sink(chunk)
    if seen != info.file_size:
        raise ValueError(f"declared {info.file_size} bytes, holds {seen}")


def member_digest(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str:
    """``sha256:<hex>`` of a member, hashed as it streams (never held whole)."""
    digest = hashlib.sha256()
    stream_member(zf, info, digest.update)
    return "sha256:" + digest.hexdigest()


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A small member's bytes; one declaring more than `limit` is refused unread."""
    if info.file_size > limit:
        raise ValueError(f"{info.file_size} bytes is too large (limit {limit})")
    parts: list[bytes] = []
    stream_member(zf, info, parts.append)
    return b"".join(parts)
