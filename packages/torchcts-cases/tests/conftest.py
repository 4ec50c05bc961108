"""Shared helpers: manifests written from keyword arguments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import Manifest, load_manifest


def manifest_text(**keys: Any) -> str:
    """Manifest source with the given NAME = value assignments."""
    keys.setdefault("DEVICE", "cpu")
    return "".join(f"{name} = {value!r}\n" for name, value in keys.items())


@pytest.fixture
def make_manifest(tmp_path: Path) -> Callable[..., Manifest]:
    """Write a manifest from keyword arguments and load it."""

    def make(**keys: Any) -> Manifest:
        path = tmp_path / "manifest.py"
        path.write_text(manifest_text(**keys), encoding="utf-8")
        return load_manifest(path)

    return make
