"""The environment an end-to-end run starts from."""

from __future__ import annotations

import os


def without_torchcts_env() -> dict[str, str]:
    """This process's environment without ``TORCHCTS_*``: the manifest's own fault
    profile and options, whatever the caller's environment says."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
