"""Remove host identity from text before it goes into a file meant to be shared.

Crash records carry stderr tails, tracebacks and command lines, which name the home
directory, the user, the host and absolute paths. The project root (the working
directory) becomes relative, the home ``~``, site-packages ``<site-packages>/...``, any
other absolute path ``<path>/<last part>``, and names ``<host>`` / ``<user>``.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_GENERIC = frozenset({"root", "user", "admin", "runner", "localhost", "nobody"})
_SEG = r"[\w.+@%~=,-]+"
_POSIX_PATH = re.compile(
    r"(?<![\w.:/<>~*\\\-\]\)])/(?=[A-Za-z_.~])" + _SEG + r"(?:/" + _SEG + r")*/?"
)
_WINDOWS_PATH = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]:(?:\\\\|\\|/)(?:[\w.+@%~=,-]+(?:\\\\|\\|/)?)*"
)
_SITE = re.compile(r"(?:site|dist)-packages/(.*)$")


@dataclass(frozen=True)
class Identity:
    """What must not leave the machine."""

    hosts: tuple[str, ...]
    users: tuple[str, ...]
    homes: tuple[str, ...]
    roots: tuple[str, ...]

    @classmethod
    def current(cls, roots: Iterable[str] = ()) -> Identity:
        """This host, user and home, read now; ``roots`` become relative paths."""
        hosts: list[str] = []
        with contextlib.suppress(OSError):
            name = socket.gethostname()
            hosts += [name, name.split(".")[0]]
        users = [os.environ.get(v, "") for v in ("USER", "USERNAME", "LOGNAME")]
        with contextlib.suppress(KeyError, OSError, ImportError):
            users.append(getpass.getuser())
        homes = [os.environ.get("HOME", ""), os.path.expanduser("~")]
        return cls(
            hosts=_names(hosts),
            users=_names(users),
            homes=_dirs(homes),
            roots=_dirs(os.path.realpath(r) for r in roots),
        )


def scrub_text(text: str, identity: Identity) -> str:
    """``text`` with roots relative, home ``~``, paths and names masked."""
    for root in identity.roots:
        text = _dir(root).sub(lambda m: "" if m.group(1) else ".", text)
    for home in identity.homes:
        text = _dir(home).sub(lambda m: "~" + (m.group(1) or ""), text)
    text = _POSIX_PATH.sub(_mask, text)
    text = _WINDOWS_PATH.sub("<path>", text)
    for name in identity.hosts:
        text = _word(name).sub("<host>", text)
    for name in identity.users:
        text = _word(name).sub("<user>", text)
    return text


def scrub_value(value: Any, identity: Identity) -> Any:
    """Every string inside a JSON value scrubbed (keys included)."""
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


def _mask(match: re.Match[str]) -> str:
    path = match.group(0)
    site = _SITE.search(path)
    if site:
        return "<site-packages>/" + site.group(1)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "<path>/" + name if name else "<path>"


def _dir(directory: str) -> re.Pattern[str]:
    return re.compile(re.escape(directory) + r"(?:(/)|(?![\w.+@%~=,-]))")


def _word(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    if len(name) >= 4:
        return re.compile(escaped, re.IGNORECASE)
    return re.compile(rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])", re.IGNORECASE)


def _names(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v for v in values if v and v.lower() not in _GENERIC}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))


def _dirs(values: Iterable[str]) -> tuple[str, ...]:
    kept = {v.rstrip("/") for v in values if v and len(v.rstrip("/")) > 1}
    return tuple(sorted(kept, key=lambda v: (-len(v), v)))
