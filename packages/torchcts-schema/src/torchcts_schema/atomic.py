"""Crash-safe file writes: a final name holds a whole file or nothing, never half of one.

Every artifact is written to a temporary file beside its final name, flushed to disk,
and only then given that name: by ``os.replace`` (`write_atomic`, which overwrites) or
by ``os.link`` (`write_once`, which never does, and takes a ``-N`` suffix when the
name is taken). A full disk or any other OSError removes the temporary file and raises
one `ArtifactWriteError` naming the final file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from torchcts_schema.errors import ArtifactWriteError

MAX_SUFFIX = 999
# os.link refuses with these where the filesystem has no hard links (some FUSE and
# network mounts, FAT); `write_once` then claims the name with O_EXCL instead
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK}


def write_atomic(path: Path, text: str | bytes, *, fsync: bool = True) -> None:
    """Write `text` (UTF-8) or bytes to a temporary file beside `path`, then rename it
    over `path`.

    Raises `ArtifactWriteError` (never a bare OSError) when any step fails.
    """
    tmp = _write_temp(path, text, fsync=fsync)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        raise ArtifactWriteError(path, exc) from None
    finally:
        _discard(tmp)  # gone already after a successful rename
    if fsync:
        fsync_directory(path.parent)


def write_once(path: Path, text: str) -> Path:
    """Create `path` exclusively (never overwrite); a taken name gets a ``-N`` suffix.

    The text is on disk under a temporary name before any final name exists, so a
    crash or a full disk never leaves a truncated file where a reader looks.
    """
    tmp = _write_temp(path, text, fsync=True)
    try:
        for n in range(MAX_SUFFIX + 1):
            candidate = (
                path if n == 0 else path.with_name(f"{path.stem}-{n}{path.suffix}")
            )
            if _claim(tmp, candidate):
                fsync_directory(path.parent)
                return candidate
    except OSError as exc:
        raise ArtifactWriteError(path, exc) from None
    finally:
        _discard(tmp)
    raise ArtifactWriteError(
        path, FileExistsError(errno.EEXIST, f"no free name after {MAX_SUFFIX} tries")
    )


def fsync_directory(directory: Path) -> None:
    """Push a rename in `directory` to disk, where the platform can (not Windows)."""
    # a directory cannot be opened (Windows) or fsynced (some network filesystems)
    # everywhere; the rename itself is still atomic there, only less durable
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write precedes ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_temp(path: Path, text: str | bytes, *, fsync: bool) -> Path:
    """A temporary file beside `path` holding `text`; removed again if anything fails."""
    data = _utf8(path, text)
    tmp: Path | None = None
    try:
        _make_parent(path)
        fd, name = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
        tmp = Path(name)
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
            os.fchmod(fd, 0o644)  # mkstemp makes 0600; artifacts are meant to be shared
        finally:
            os.close(fd)
    except OSError as exc:
        if tmp is not None:
            _discard(tmp)
        raise ArtifactWriteError(path, exc) from None
    except BaseException:
        if tmp is not None:
            _discard(tmp)
        raise
    return tmp


def _utf8(path: Path, text: str | bytes) -> bytes:
    """`text` as UTF-8; a lone surrogate (from a crafted or backend-made string)
    has no UTF-8 form, and is one `ArtifactWriteError` naming the file, not a
    traceback."""
    if isinstance(text, bytes):
        return text
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # a write error like any other, so a run's write-failure handling sees it
        why = (
            f"the text holds {text[exc.start]!r} at offset {exc.start}, "
            "a lone surrogate that UTF-8 cannot encode"
        )
        raise ArtifactWriteError(path, OSError(errno.EILSEQ, why)) from None


def _make_parent(path: Path) -> None:
    """The folder `path` goes in; a file in its place is named, not 'file exists'."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        ancestors = (path.parent, *path.parent.parents)
        blocker = next((p for p in ancestors if p.exists() and not p.is_dir()), None)
        if blocker is None:
            raise ArtifactWriteError(path, exc) from None
        why = f"{blocker} is a file, not a directory"
        raise ArtifactWriteError(path, NotADirectoryError(errno.ENOTDIR, why)) from None


def _discard(tmp: Path) -> None:
    # the write's own error is the one to report; a leftover hidden temp file is not
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def _claim(tmp: Path, candidate: Path) -> bool:
    """Give `tmp`'s content the name `candidate` unless it is taken."""
    try:
        os.link(tmp, candidate)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    try:  # no hard links: an empty placeholder claims the name, the rename fills it
        os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    try:
        os.replace(tmp, candidate)
    except BaseException:
        candidate.unlink(missing_ok=True)  # our own empty placeholder
        raise
    return True
