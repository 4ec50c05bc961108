"""Turning untrusted artifact strings into safe, bounded text for every output format.

Exception messages, tracebacks and stderr tails come from the backend under test and
may hold anything: markup, control characters, lone surrogates, bidi overrides, host
paths or megabytes of text. Every string from an artifact passes through `clean` before
any renderer sees it, so each renderer only has to apply its own escaping.
"""

from __future__ import annotations

import re

# XML 1.0 forbids these; markdown and HTML gain nothing from them either
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
# bidi controls can make a report read differently from what it says (trojan source)
_BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# a home directory names a user; it is host identity
_HOME = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[^/\\\s'\"]+")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~#!])")
_WS = re.compile(r"\s+")


def clean(text: object) -> str:
    """Text without characters XML cannot hold, bidi controls shown, home dirs hidden."""
    value = text if isinstance(text, str) else str(text)
    if value.isascii() and value.isprintable() and not _maybe_home(value):
        return value  # the common case, decided in C without a regex
    value = _INVALID.sub("\ufffd", value)
    value = _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", value)
    return _HOME.sub("~", value)


def _maybe_home(value: str) -> bool:
    return "/home/" in value or "/Users/" in value or "\\Users\\" in value


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters, saying how many were left out (never silently)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def tail_lines(text: str, max_lines: int, max_chars: int) -> str:
    """The last lines of `text`, bounded twice, with a note when something was cut."""
    lines = text.splitlines()
    note = ""
    if len(lines) > max_lines:
        note = f"[{len(lines) - max_lines} earlier lines left out]\n"
        lines = lines[-max_lines:]
    body = "\n".join(lines)
    if len(body) > max_chars:
        note += f"[{len(body) - max_chars} earlier characters left out]\n"
        body = body[-max_chars:]
    return note + body


def one_line(text: object, limit: int = 300) -> str:
    """A cleaned, whitespace-collapsed, bounded single line."""
    value = text if isinstance(text, str) else str(text)
    # cut before the regexes run so a megabyte message costs no more than a short one
    cut = max(0, len(value) - limit * 4)
    value = _WS.sub(" ", clean(value[: limit * 4])).strip()
    if not cut:
        return truncate(value, limit)
    return f"{value[:limit]}… ({len(value) - limit + cut} more characters)"


def md(text: object, limit: int = 300) -> str:
    """Inline markdown text that can be neither markup nor a table-cell break."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(text, limit))


def md_code(text: object, limit: int = 300) -> str:
    """An inline code span when the text allows one, else escaped text."""
    value = one_line(text, limit)
    if not value or "`" in value:
        return md(value, limit)
    # inside a table a pipe still ends the cell unless escaped, even in code
    return "`" + value.replace("|", "\\|") + "`"


def md_block(text: object, *, max_lines: int = 40, max_chars: int = 4000) -> str:
    """A fenced code block whose fence no content line can close."""
    value = text if isinstance(text, str) else str(text)
    # bound first, clean after: the regexes then only see what the block shows
    body = clean(tail_lines(value, max_lines, max_chars))
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def py_string(text: str) -> str:
    """A Python string literal of exactly `text`, in ASCII (pasted code stays code).

    `ascii` escapes every control character, line break, bidi override and lone
    surrogate, so no content can end the literal or the line. Double quotes, as
    upstream lists write them, where the text holds no quote to escape.
    """
    literal = ascii(text)
    if "'" not in text and '"' not in text:
        return f'"{literal[1:-1]}"'
    return literal


def py_comment(text: object, limit: int = 300) -> str:
    """A ``#`` comment of `text` that no content can end early: one cleaned, bounded
    line, everything outside printable ASCII escaped."""
    line = one_line(text, limit).encode("ascii", "backslashreplace").decode("ascii")
    return "# " + "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in line)


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table from cells that are already escaped."""
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)
