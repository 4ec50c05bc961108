"""The heap settling a run does at start-up and after its last case."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from torchcts_runner.heap import freeze_for_exit, freeze_start_up


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the test process's collector as it was."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_start_up_freezes_what_is_alive_and_keeps_collecting(collector: None) -> None:
    """Objects alive at start-up leave every generation; later ones are collected."""
    gc.unfreeze()
    kept = [[] for _ in range(1000)]
    freeze_start_up()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.isenabled()
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1  # made after the freeze: still collected


def test_exit_freezes_and_stops_collecting(collector: None) -> None:
    """After the last case nothing is scanned again: frozen, collector off."""
    gc.unfreeze()
    freeze_for_exit()
    assert gc.get_freeze_count() > 0
    assert not gc.isenabled()
