"""Artifact text printed to a terminal never carries live control sequences."""

from __future__ import annotations

from torchcts_schema import for_terminal


def test_ansi_escape_becomes_visible_text() -> None:
    """An ESC byte is shown as the four characters \\x1b, not sent to the terminal."""
    assert for_terminal("a\x1b[2Jb") == "a\\x1b[2Jb"


def test_lone_surrogate_and_nul_are_escaped() -> None:
    """A lone surrogate (unencodable) and NUL print as escapes."""
    assert for_terminal("x\ud800y\x00") == "x\\ud800y\\x00"


def test_c1_controls_and_bidi_overrides_are_escaped() -> None:
    """C1 controls (CSI as one byte) and bidi overrides cannot reorder a line."""
    assert for_terminal("\x9b31m\u202e") == "\\x9b31m\\u202e"


def test_newlines_kept_or_escaped_on_request() -> None:
    """Tab and newline stay by default; one-line output escapes newlines too."""
    assert for_terminal("a\tb\nc") == "a\tb\nc"
    assert for_terminal("a\nb", keep_newlines=False) == "a\\nb"


def test_plain_unicode_is_untouched() -> None:
    """Ordinary non-ASCII text (Greek, CJK, emoji) is left as it is."""
    text = "μ 误差 ✓ 😀"
    assert for_terminal(text) == text
