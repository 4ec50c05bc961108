"""How printed commands name the tools: bin/ in a checkout, the bare script elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchcts_schema import (
    CHECKOUT_PREFIX,
    TOOL_PREFIX_OPTION,
    TOOLS,
    recorded_prefix,
    tool_command,
    tool_prefix_at,
)


def test_checkout_root_gets_the_launcher_prefix(tmp_path: Path) -> None:
    """A directory with bin/.launch is a checkout root; one without is not."""
    assert tool_prefix_at(tmp_path) == ""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / ".launch").write_text("#!/bin/sh\n")
    assert tool_prefix_at(tmp_path) == "bin/"


def test_tool_command_spells_the_word_a_person_types() -> None:
    """bin/torchcts-run in a checkout, torchcts-run elsewhere."""
    assert tool_command("torchcts-run", CHECKOUT_PREFIX) == "bin/torchcts-run"
    assert tool_command("torchcts-report") == "torchcts-report"


def test_unknown_tool_is_refused() -> None:
    """Only the project's own tools are named."""
    with pytest.raises(ValueError, match="not a TorchCTS tool"):
        tool_command("rm")


@pytest.mark.parametrize(
    "value", ["rm -rf / ; ", "bin", "/usr/bin/", "bin/../", 3, None, "bin/\n"]
)
def test_crafted_prefix_in_an_artifact_prints_nothing(value: object) -> None:
    """A prefix read back from an artifact is printed only when it is exactly bin/."""
    assert recorded_prefix({TOOL_PREFIX_OPTION: value}) == ""
    assert recorded_prefix({TOOL_PREFIX_OPTION: "bin/"}) == "bin/"


def test_repository_launchers_link_to_one_script() -> None:
    """Every tool has a bin/ launcher in the repository, all the same script."""
    root = Path(__file__).resolve().parents[3]
    for tool in TOOLS:
        link = root / "bin" / tool
        assert link.resolve() == (root / "bin" / ".launch").resolve()
