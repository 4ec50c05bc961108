"""Live OpInfo generator passes kept between cases, so sample i+1 continues from i.

Rebuilding sample i from a fresh pass regenerates samples 0..i, which makes a process
that runs every sample of an op quadratic in the op's sample count. Selection orders
cases dtype -> op -> variant -> sample, so a process asks for the samples of one pass
mostly in increasing order (an xdist worker may skip some). The last few passes stay
alive with their position; a request at or past the position continues the pass, an
earlier one starts it again.

A pass must draw exactly what an uninterrupted fresh pass draws, although the cases run
between two requests use the same global RNGs. So each pass owns the RNG states it left
behind: they are restored before it advances and saved after. A pass is kept only when
advancing it left grad mode and the default dtype as they were: a generator suspended
inside such a context would leak it into the cases (a fresh pass is closed, which exits
its contexts, before the case runs).

Every live pass is closed at the process's exit (`close_all_streams`, an ``atexit``
handler, which runs before the interpreter tears its modules down, and also on the
way out of a process that skips that teardown). Left to the teardown, a pass was
closed whenever its last reference went, possibly after torch's modules were
cleared: OpInfo's generators are wrapped in ``torch.no_grad()``, whose re-entry on
close then failed and printed "Exception ignored in: <generator ...>" with
``torch._jit_internal.is_scripting`` in its traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import random
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

import torch

from torchcts_cases.numpy_rng import NumpyRngState, restore_numpy_rng, save_numpy_rng

RngState = tuple[torch.Tensor, Any, NumpyRngState | None]


class PassExhausted(LookupError):
    """The pass ended before the requested index (distinct from a generator error)."""


class _Pass:
    __slots__ = ("items", "position", "rng", "start")

    def __init__(self, start: Callable[[], Iterable[Any]]) -> None:
        self.start = start  # keeps what the key names alive while the pass is cached
        self.items: Iterator[Any] = iter(start())
        self.position = 0  # how many items this pass has produced
        self.rng: RngState | None = None


class SampleStreams:
    """An LRU of live generator passes; `capacity` 0 makes every request a fresh pass."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._passes: OrderedDict[Hashable, _Pass] = OrderedDict()
        _STREAMS.add(self)

    def item(
        self, key: Hashable, start: Callable[[], Iterable[Any]], index: int
    ) -> Any:
        """Item `index` of the pass `start` begins; `start` seeds, then makes the items.

        Each call hands out an object no earlier call handed out: asking for an index
        the pass has already passed starts it again. Exceptions from the generator
        propagate and drop the pass; `PassExhausted` says the pass has no such item.
        """
        if index < 0:
            raise PassExhausted(index)
        live = self._passes.pop(key, None)
        ambient = _ambient()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if live is not None and index < live.position:
                _close(live)
                live = None
            if live is None:
                live = _Pass(start)
            else:
                assert live.rng is not None
                set_rng_state(live.rng)
            item = _advance(live, index)
            if _ambient() != ambient or self.capacity <= 0:
                _close(live)
                return item
            live.rng = rng_state(live.rng)
            self._passes[key] = live
            while len(self._passes) > self.capacity:
                _close(self._passes.popitem(last=False)[1])
        return item

    def clear(self) -> None:
        """Close and forget every live pass."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            while self._passes:
                _close(self._passes.popitem()[1])

    def __len__(self) -> int:
        return len(self._passes)


_STREAMS: weakref.WeakSet[SampleStreams] = weakref.WeakSet()


@atexit.register
def close_all_streams() -> None:
    """Close every live pass of every `SampleStreams` of this process (at exit, while
    torch is whole: see the module docstring)."""
    for streams in list(_STREAMS):
        streams.clear()


def _advance(live: _Pass, index: int) -> Any:
    item: Any = None
    try:
        while live.position <= index:
            item = next(live.items)
            live.position += 1
    except StopIteration:
        raise PassExhausted(index) from None
    except BaseException:
        _close(live)
        raise
    return item


def _close(live: _Pass) -> None:
    """Close the generator (running its exits); a pass is dropped whatever it raises."""
    close = getattr(live.items, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _ambient() -> tuple[object, ...]:
    """Global modes a suspended generator could leave changed for the cases."""
    return (
        torch.is_grad_enabled(),
        torch.get_default_dtype(),
        torch.is_inference_mode_enabled(),
    )


def rng_state(previous: RngState | None = None) -> RngState:
    """The global RNG states a generator pass draws from: torch's CPU, random, numpy.

    `previous`, the state restored just before, lets numpy's part be kept when numpy
    was not drawn from since (`numpy_rng`: its state is costly to copy)."""
    return (
        torch.get_rng_state(),
        random.getstate(),
        save_numpy_rng(previous[2] if previous is not None else None),
    )


def set_rng_state(state: RngState) -> None:
    """Restore what `rng_state` returned."""
    torch_state, python_state, numpy_state = state
    torch.set_rng_state(torch_state)
    random.setstate(python_state)
    restore_numpy_rng(numpy_state)
