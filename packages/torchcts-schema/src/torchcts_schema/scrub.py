"""The one host-identity scrubber: host and user names, home, roots and absolute paths.

Everything that leaves the machine (crash records, archives, backend evidence, crash
candidate packets) goes through `scrub_text` / `scrub_bytes` / `scrub_value`, and
`find_identity` reports exactly what `scrub_text` would replace, so "nothing survived"
is a real check. Rules, in the order they apply:

1. a project root becomes relative (``/w/p/x`` -> ``x``, ``/w/p`` -> ``.``);
2. a home directory becomes ``~``;
3. any other absolute path keeps its last part (``<path>/x.py``), site-packages its
   package path (``<site-packages>/torch/_ops.py``); a Windows path becomes ``<path>``;
4. a host or user name becomes ``<host>`` / ``<user>`` as a whole token (between
   non-alphanumerics: ``alice@box``, ``pytest-of-alice``, ``ALICE_x``; never inside
   ``malice``), whatever its length. A name of one character, or one that is also a
   common word (`COMMON_WORDS`: ``root``, ``torch``, ``vm``, ``eq``...), is replaced only
   where it names a host or user: ``user@<name>``, ``<name>@host``, ``<name>:8080``,
   ``<name>: message``, ``/home/<name>``, ``\\Users\\<name>``, ``<path>/<name>``, and
   after ``host`` / ``hostname`` / ``user`` / ``username`` / ``node`` / ``login``
   followed by ``=``, ``:`` or a space. The mask words themselves (host, user, path)
   and ``localhost`` identify nobody and are never names.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

# Short words of results, tracebacks and English that a host or user may also be
# called; masking them everywhere would corrupt case ids ("opinfo/eq/..."), JSON keys
# ("torch_version") and prose, so they are masked only in identity-bearing contexts.
_COMMON_WORDS_TEXT = """
a an as at be by do go he if in is it me my no of on or so to up us we
all and any are but can for get had has her his its new not now off old one
our out own put run see set the two use was way who yes you end key log max min
abs add sub mul div mm mv bmm eq ne lt le gt ge qr fft cat exp pow neg std var sum
nn fx op ops io os id pc vm ci cd ok pr ip tcp udp ssh box lab web app api
bin lib src tmp opt etc usr home data work build local server node main master
worker client site packages root admin runner ubuntu docker nobody torch torchcts
python test tests cpu gpu cuda mps xpu meta simdev dev float int bool none null
true false
"""
COMMON_WORDS = frozenset(_COMMON_WORDS_TEXT.split())
# never names: the masks spell them, and localhost identifies nobody
NOT_NAMES = frozenset({"host", "user", "path", "localhost"})
HOST_MASK = "<host>"
USER_MASK = "<user>"

_SEGMENT = r"[\w.+@%~=,-]+"
# An absolute POSIX path: a '/' that does not follow a word, URL, tag or path
# character, then path segments. "1/2", "</td>", "https://x" and "a/b" do not match,
# nor an already masked path ("<path>/x", "&lt;path&gt;/x"). The lookbehind comes after
# the literal '/' so the engine jumps between slashes instead of trying every position.
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
_ALNUM = "A-Za-z0-9"
# what may stand before a common-word name for it to be one: an address, a masked
# path, a home directory, or a keyword that says a host or user follows
_PREFIX = (
    r"@|<path>/|(?<![" + _ALNUM + r"])(?:home|users)(?:\\\\|\\|/)+"
    r"|(?<![<\w])(?:host(?:name)?|user(?:name)?|node(?:name)?|login)"
    r"[\"']?(?:\s*[=:]\s*|\s+)[\"']?"
)
# ... or after it: "name@host", "name:8080", "name: message"
_SUFFIX = r"(?=@|:\d|:\s)"


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
        with contextlib.suppress(OSError):
            name = socket.gethostname()
            hosts += [name, name.split(".")[0]]
        users: list[str] = []
        with contextlib.suppress(KeyError, OSError, ImportError):
            users.append(getpass.getuser())
        users += [os.environ.get(v, "") for v in ("USER", "USERNAME", "LOGNAME")]
        homes = [os.environ.get(v, "") for v in ("HOME", "USERPROFILE")]
        with contextlib.suppress(RuntimeError, KeyError):
            homes.append(str(Path.home()))
        return cls(
            host_names=_names(hosts),
            user_names=_names(users),
            homes=_dirs(homes),
            roots=_dirs(str(Path(r).resolve()) for r in roots),
        )


_MAX_PASSES = 16


def scrub_text(text: str, identity: HostIdentity) -> str:
    """`text` with roots relative, home ``~``, other paths and names masked.

    Repeated until nothing changes: one replacement can join the text around it
    into a new match ("/w/p/w/p" with root "/w/p"; a path the path mask split
    around ``@``), and `find_identity` must find nothing in the result.
    """
    for _ in range(_MAX_PASSES):
        scrubbed = _scrub_once(text, identity)
        if scrubbed == text:
            break
        text = scrubbed
    return text


def _scrub_once(text: str, identity: HostIdentity) -> str:
    for root in identity.roots:
        if root in text:
            text = _dir_pattern(root).sub(lambda m: "" if m.group(1) else ".", text)
    for home in identity.homes:
        if home in text:
            text = _dir_pattern(home).sub(lambda m: "~" + (m.group(1) or ""), text)
    if "/" in text:
        text = _POSIX_PATH.sub(_mask_path, text)
    if ":\\" in text or ":/" in text:  # cheap test before a scan of every letter
        text = _WINDOWS_PATH.sub("<path>", text)
    lowered = text.lower()
    for name, mask in _masked_names(identity):
        if name.lower() in lowered:
            text = _name_pattern(name).sub(_keep_prefix(mask), text)
            lowered = text.lower()
    return text


def find_identity(text: str, identity: HostIdentity) -> list[str]:
    """Each thing in `text` that `scrub_text` would replace, named; empty when clean."""
    found = [f"root {r!r}" for r in identity.roots if _dir_pattern(r).search(text)]
    found += [f"home {h!r}" for h in identity.homes if _dir_pattern(h).search(text)]
    found += [f"absolute path {m.group(0)!r}" for m in _POSIX_PATH.finditer(text)]
    found += [f"absolute path {m.group(0)!r}" for m in _WINDOWS_PATH.finditer(text)]
    for name, _mask in _masked_names(identity):
        if _name_pattern(name).search(text):
            found.append(f"name {name!r}")
    return found


def scrub_bytes(data: bytes, identity: HostIdentity) -> bytes:
    """`scrub_text` over UTF-8 bytes; undecodable bytes pass through unchanged."""
    text = data.decode("utf-8", errors="surrogateescape")
    return scrub_text(text, identity).encode("utf-8", errors="surrogateescape")


def scrub_value(value: Any, identity: HostIdentity) -> Any:
    """Every string inside a JSON value scrubbed, keys included; tuples become lists."""
    if isinstance(value, str):
        return scrub_text(value, identity)
    if isinstance(value, list | tuple):
        return [scrub_value(v, identity) for v in value]
    if isinstance(value, dict):
        return {
            scrub_text(str(k), identity): scrub_value(v, identity)
            for k, v in value.items()
        }
    return value


def scrub_argv(argv: Iterable[str], identity: HostIdentity) -> list[str]:
    """Each argument scrubbed on its own (a command line kept as a list)."""
    return [scrub_text(arg, identity) for arg in argv]


def _masked_names(identity: HostIdentity) -> list[tuple[str, str]]:
    # longest first, so "box.lan" is masked whole before "box"
    pairs = [(n, HOST_MASK) for n in identity.host_names]
    pairs += [(n, USER_MASK) for n in identity.user_names]
    kept = [(n, m) for n, m in pairs if n and n.lower() not in NOT_NAMES]
    return sorted(kept, key=lambda p: (-len(p[0]), p[0], p[1]))


def _keep_prefix(mask: str) -> Callable[[re.Match[str]], str]:
    # a context before the name (``@``, ``host=``) stays; only the name is masked
    return lambda m: (m.group("pre") or "") + mask


def is_common_name(name: str) -> bool:
    """True when `name` is masked only in identity-bearing contexts (rule 4)."""
    return len(name) < 2 or name.lower() in COMMON_WORDS


@lru_cache(maxsize=256)
def _name_pattern(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    if not is_common_name(name):
        # the literal first and the lookbehind after it, so the engine searches for
        # the literal; "(?P<pre>)" never matches but keeps one replacement function
        return re.compile(
            rf"(?P<pre>(?!))?{escaped}(?<![{_ALNUM}]{escaped})(?![{_ALNUM}])",
            re.IGNORECASE,
        )
    return re.compile(
        rf"(?:(?P<pre>{_PREFIX})|(?<![{_ALNUM}])){escaped}(?![{_ALNUM}])"
        rf"(?(pre)|{_SUFFIX})",
        re.IGNORECASE,
    )


@lru_cache(maxsize=64)
def _dir_pattern(directory: str) -> re.Pattern[str]:
    # the directory itself, not a longer sibling ("/root" must not match "/rootfs")
    return re.compile(re.escape(directory) + r"(?:(/)|(?![\w.+@%~=,-]))")


def _mask_path(match: re.Match[str]) -> str:
    path = match.group(0)
    site = _SITE.search(path)
    if site:
        return "<site-packages>/" + site.group(1)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "<path>/" + name if name else "<path>"


def _names(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v for v in values if v and v.lower() not in NOT_NAMES}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


def _dirs(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v.rstrip("/\\") for v in values if v and len(v.rstrip("/\\")) > 1}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


__all__ = [
    "COMMON_WORDS",
    "HostIdentity",
    "find_identity",
    "is_common_name",
    "scrub_argv",
    "scrub_bytes",
    "scrub_text",
    "scrub_value",
]
