"""Remove host identity (host name, user name, home directory, absolute paths) from text.

Everything that leaves the machine (archives, the backend evidence store, crash
candidate packets) goes through `scrub_text`, and `find_identity` is the independent
check that nothing slipped through. The identity is read at call time from `socket`,
`getpass` and the environment, so tests can plant one.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Names that identify nobody and are words of ordinary results ("root cause",
# "torchcts_runner", "torch_version"); masking them would corrupt artifacts (even JSON
# keys) without protecting anyone.
GENERIC_NAMES = frozenset(
    {
        "root", "user", "admin", "runner", "localhost", "ubuntu", "docker", "nobody",
        "torch", "torchcts", "python", "test", "cpu", "gpu", "cuda", "mps", "xpu",
        "meta", "simdev", "dev", "host", "path",
    }
)  # fmt: skip
# A host or user name this short (e.g. host "vm") identifies nobody; masking it
# would still eat ordinary tokens, so the current identity ignores it.
MIN_NAME = 3

_SEGMENT = r"[\w.+@%~=,-]+"
# An absolute POSIX path: a '/' that does not follow a word, URL, tag or path
# character, then path segments. "1/2", "</td>", "https://x" and "a/b" do not match,
# nor an already masked path escaped in HTML ("&lt;path&gt;/x").
# The lookbehind comes after the literal '/' so the regex engine can jump between
# slashes instead of trying every position (ten times faster on a large journal).
_POSIX_PATH = re.compile(
    r"/(?<![\w.:;/<>~*\\\-\]\)]/)(?=[A-Za-z_.~])"
    + _SEGMENT
    + r"(?:/"
    + _SEGMENT
    + r")*/?"
)
# A Windows drive path, in plain text or JSON-escaped (doubled backslashes).
_WINDOWS_PATH = re.compile(
    r"[A-Za-z]:(?<![A-Za-z0-9][A-Za-z]:)(?:\\\\|\\|/)(?:[\w.+@%~=,-]+(?:\\\\|\\|/)?)*"
)
_SITE = re.compile(r"(?:site|dist)-packages/(.*)$")


@dataclass(frozen=True)
class HostIdentity:
    """What must not leave the machine; `roots` are directories to make relative."""

    host_names: tuple[str, ...] = ()
    user_names: tuple[str, ...] = ()
    homes: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()

    @classmethod
    def current(cls, roots: Iterable[Path | str] = ()) -> HostIdentity:
        """The identity of this process's host, user and home, read now."""
        hosts: list[str] = []
        try:
            name = socket.gethostname()
        except OSError:
            name = ""
        if name:
            hosts += [name, name.split(".")[0]]
        users: list[str] = []
        with contextlib.suppress(KeyError, OSError, ImportError):
            users.append(getpass.getuser())
        users += [os.environ.get(v, "") for v in ("USER", "USERNAME", "LOGNAME")]
        homes = [os.environ.get(v, "") for v in ("HOME", "USERPROFILE")]
        with contextlib.suppress(RuntimeError):
            homes.append(str(Path.home()))
        absolute_roots = [str(Path(r).resolve()) for r in roots]
        return cls(
            host_names=_names(hosts),
            user_names=_names(users),
            homes=_dirs(homes),
            roots=_dirs(absolute_roots),
        )


def scrub_text(text: str, identity: HostIdentity) -> str:
    """`text` with roots made relative, home as ``~``, other paths and names masked."""
    for root in identity.roots:
        text = _dir_pattern(root).sub(lambda m: "" if m.group(1) else ".", text)
    for home in identity.homes:
        text = _dir_pattern(home).sub(lambda m: "~" + (m.group(1) or ""), text)
    text = _POSIX_PATH.sub(_mask_path, text)
    if ":\\" in text or ":/" in text:  # cheap test before a scan of every letter
        text = _WINDOWS_PATH.sub("<path>", text)
    lowered = text.lower()
    for names, mask in (
        (identity.host_names, "<host>"),
        (identity.user_names, "<user>"),
    ):
        for name in names:
            if name.lower() in lowered:
                text = _name_pattern(name).sub(mask, text)
    return text


def scrub_bytes(data: bytes, identity: HostIdentity) -> bytes:
    """`scrub_text` over UTF-8 bytes; undecodable bytes pass through unchanged."""
    text = data.decode("utf-8", errors="surrogateescape")
    return scrub_text(text, identity).encode("utf-8", errors="surrogateescape")


def find_identity(text: str, identity: HostIdentity) -> list[str]:
    """What in `text` still identifies the host: names, home, absolute paths."""
    found: list[str] = []
    for name in (*identity.host_names, *identity.user_names):
        if _name_pattern(name).search(text):
            found.append(f"name {name!r}")
    found += [f"home {h!r}" for h in identity.homes if _dir_pattern(h).search(text)]
    found += [f"absolute path {m.group(0)!r}" for m in _POSIX_PATH.finditer(text)]
    found += [f"absolute path {m.group(0)!r}" for m in _WINDOWS_PATH.finditer(text)]
    return found


def scrub_argv(argv: Iterable[str], identity: HostIdentity) -> list[str]:
    """Each argument scrubbed on its own (a command line kept as a list)."""
    return [scrub_text(arg, identity) for arg in argv]


def _mask_path(match: re.Match[str]) -> str:
    path = match.group(0)
    site = _SITE.search(path)
    if site:
        return "<site-packages>/" + site.group(1)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "<path>/" + name if name else "<path>"


def _dir_pattern(directory: str) -> re.Pattern[str]:
    # the directory itself, not a longer sibling ("/root" must not match "/rootfs")
    return re.compile(re.escape(directory) + r"(?:(/)|(?![\w.+@%~=,-]))")


def _name_pattern(name: str) -> re.Pattern[str]:
    # whole tokens only (between non-alphanumerics: "pytest-of-alice", "alice@box",
    # "alice.local"), so a name never eats part of a longer word; the literal comes
    # first and the lookbehind after it, so the engine searches for the literal
    escaped = re.escape(name)
    before = r"(?<![A-Za-z0-9]" + escaped + ")"
    return re.compile(escaped + before + r"(?![A-Za-z0-9])", re.IGNORECASE)


def _names(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v for v in values if len(v) >= MIN_NAME and v.lower() not in GENERIC_NAMES}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


def _dirs(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v.rstrip("/\\") for v in values if v and len(v.rstrip("/\\")) > 1}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))
