"""numpy's global RNG state: the quick save and restore give exactly numpy's own."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy
import pytest
from torchcts_cases import numpy_rng
from torchcts_cases.numpy_rng import restore_numpy_rng, save_numpy_rng
from torchcts_cases.sample_stream import SampleStreams


def _draw(rng: random.Random) -> None:
    """Uniform and Gaussian draws in odd counts: the cached Gaussian comes and goes."""
    for _ in range(rng.randrange(4)):
        if rng.random() < 0.5:
            numpy.random.standard_normal(rng.choice((1, 2, 3)))
        else:
            numpy.random.random(rng.choice((1, 5, 700)))


def _same(state: tuple[Any, ...], other: tuple[Any, ...]) -> bool:
    return (
        state[0] == other[0]
        and numpy.array_equal(state[1], other[1])
        and tuple(state[2:]) == tuple(other[2:])
    )


@pytest.fixture(params=["raw", "numpy's own"])
def access(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways: the raw key and position, and get_state/set_state only."""
    if request.param == "numpy's own":
        monkeypatch.setattr(numpy_rng, "_RAW", _NoRaw())
    return str(request.param)


class _NoRaw:
    def address_for(self, numpy: Any) -> None:
        return None


def test_the_raw_key_and_position_are_usable_on_this_numpy() -> None:
    """Otherwise the quick path would silently never run here."""
    assert numpy_rng._RAW.address_for(numpy) is not None


def test_restore_gives_numpys_state_with_and_without_a_cached_gaussian(
    access: str,
) -> None:
    rng = random.Random(access)
    kept = numpy.random.get_state()
    try:
        for trial in range(200):
            numpy.random.seed(trial)
            _draw(rng)
            wanted = numpy.random.get_state()
            saved = save_numpy_rng()
            _draw(rng)
            if trial % 3 == 0:
                numpy.random.seed(trial + 1)
            restore_numpy_rng(saved)
            assert _same(numpy.random.get_state(), wanted), trial
            follow = numpy.random.standard_normal(3)
            numpy.random.set_state(wanted)
            assert numpy.array_equal(follow, numpy.random.standard_normal(3))
    finally:
        numpy.random.set_state(kept)


def test_a_state_is_kept_only_while_numpy_is_not_drawn_from(access: str) -> None:
    numpy.random.seed(5)
    first = save_numpy_rng()
    restore_numpy_rng(first)
    again = save_numpy_rng(first)
    assert (again is first) == (access == "raw")  # nothing drawn: no get_state
    assert again is not None and first is not None
    assert _same(again.legacy, first.legacy)
    numpy.random.random(1)
    moved = save_numpy_rng(first)
    assert moved is not None and not _same(moved.legacy, first.legacy)
    numpy.random.standard_normal(1)  # two made, one cached
    cached = save_numpy_rng()
    assert cached is not None and not cached.clean
    numpy.random.standard_normal(1)  # the cached one taken: same key and position
    taken = save_numpy_rng(cached)
    assert taken is not cached and taken is not None and taken.legacy[3] == 0


def test_a_pass_drawing_from_numpy_late_gives_the_samples_of_a_fresh_pass(
    access: str,
) -> None:
    """A pass that draws nothing from numpy at first, then uniforms and odd counts of
    Gaussians, continued between cases that seed numpy and draw from it."""

    def start() -> Iterator[float]:
        numpy.random.seed(77)
        for index in range(60):
            if index < 5:
                yield float(index)
            elif index % 2:
                yield float(numpy.random.standard_normal(index % 4 + 1).sum())
            else:
                yield float(numpy.random.random())

    fresh = list(start())
    streams = SampleStreams(capacity=2)
    rng = random.Random(1)
    for index in range(60):
        numpy.random.seed(1000 + index)  # the case's own seed, then its draws
        _draw(rng)
        assert streams.item("numpy", start, index) == fresh[index], index
