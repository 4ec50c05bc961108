"""Structural checks of a zip archive, made before anything in it is decompressed.

Names that escape (absolute, ``..``, backslashes), links and other non-regular members,
encryption, unknown compression, duplicate or case-colliding names, file/directory
clashes, oversized members or totals, and compression ratios that betray a zip bomb.
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Limits:
    """What a reviewer's machine is willing to unpack."""

    max_members: int = 20_000
    max_member_bytes: int = 512 * 2**20
    max_total_bytes: int = 2 * 2**30
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 2**20  # small members may compress well; bombs are big
    max_submission_bytes: int = 16 * 2**20


def structure_problems(infos: list[zipfile.ZipInfo], limits: Limits) -> list[str]:
    """Every structural problem, found from the central directory alone."""
    problems: list[str] = []
    if len(infos) > limits.max_members:
        return [f"{len(infos)} members (more than {limits.max_members})"]
    seen: set[str] = set()
    folded: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        problems += [f"{name!r}: {p}" for p in _name_problems(name)]
        if name in seen:
            problems.append(f"{name!r}: duplicate member name")
        elif name.lower() in folded:
            problems.append(f"{name!r}: differs from another member only in case")
        seen.add(name)
        folded.add(name.lower())
        mode = info.external_attr >> 16
        if info.create_system == 3 and mode and stat.S_ISLNK(mode):
            problems.append(f"{name!r}: symbolic link (links are not accepted)")
        elif (
            info.create_system == 3
            and mode
            and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
        ):
            problems.append(f"{name!r}: not a regular file (mode {oct(mode)})")
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
    files = {i.filename for i in infos if not i.is_dir()}
    for name in sorted(files):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in files:
                problems.append(
                    f"{parent!r}: is both a file and the directory of {name!r}"
                )
    if total > limits.max_total_bytes:
        problems.append(
            f"{total} bytes uncompressed in all (limit {limits.max_total_bytes})"
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
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        problems.append("'..' escapes the archive")
    return problems


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, refusing one that holds more or less than it declares."""
    # never trust the declared size alone: read at most one byte more than it
    with zf.open(info) as fh:
        data = fh.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise ValueError(f"declared {info.file_size} bytes, holds {len(data)}")
    return data
