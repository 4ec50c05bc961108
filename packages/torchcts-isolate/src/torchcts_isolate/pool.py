"""Run cases in child interpreters: one fresh child per case, or a warm pool.

`run_isolated` starts a fresh interpreter (``sys.executable``, never a fork of a process
that may have touched a device), runs one payload and cleans up. `WarmPool` keeps
children that have already imported the entry's module (and with it torch and the
backend) waiting, so isolating a case costs a pipe round trip instead of an interpreter
start. A child that crashed, hung, raised or ran out of memory is thrown away and a
replacement starts at once, importing while the parent records the crash.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from torchcts_isolate.outcome import IsolatedOutcome
from torchcts_isolate.worker import BEAT_INTERVAL_S, Child


def run_isolated(
    entry: str,
    payload: dict[str, Any],
    *,
    timeout_s: float,
    heartbeat_s: float | None,
    memory_mb: int | None,
    env: dict[str, str] | None = None,
) -> IsolatedOutcome:
    """Run ``entry(payload)`` in a fresh child interpreter and say how it ended.

    ``timeout_s`` and ``heartbeat_s`` count from the moment the payload is handed over
    (the import of the entry's module is not part of the case). ``env`` overrides the
    parent's environment. The child and every process in its group are gone on return.
    """
    child = Child(entry, env=env, beat_interval_s=_beat(heartbeat_s))
    try:
        return child.run(
            payload, timeout_s=timeout_s, heartbeat_s=heartbeat_s, memory_mb=memory_mb
        )
    finally:
        child.close(graceful=False)  # the case is over; no need to wait for an exit


class WarmPool:
    """Children that already imported ``entry``'s module, waiting for payloads.

    ``size`` children are kept started; the parent uses one at a time, so any beyond
    the first are spares that take over the moment a child is lost. A spare costs a
    whole interpreter start (torch, the backend, the case catalogue: seconds of CPU)
    that a run which never loses a child pays for nothing, so ``spares_after_loss``
    adds spares only once the first child is lost: crashes come in runs (the rest of
    a crashing op is isolated), and from then on each loss is covered. ``recycle_after``
    retires a healthy child after that many cases (for backends that leak state), and
    ``retire`` retires one whose returned result it says spoiled the process (a device
    the case left unusable): the next payload goes to a child that never saw it.
    ``preload`` names modules a child imports before it counts as warm (torch, the
    backend), and ``warmup`` is a ``("module:function", args)`` it calls once after
    them, so the first case a child runs does not pay for either (nor risk its
    per-case limit on them). ``memory_mb`` caps each payload's address space; with
    ``entry_caps_memory`` the entry applies that cap itself, around the part of the
    payload that is the case (`memory_limit`), and the pool only uses the number to
    explain a child that died out of memory.
    Closing the pool (or the parent's exit) ends every child and its group; a child
    whose parent dies notices its control pipe closing and exits. Not thread-safe:
    one caller at a time (each xdist worker has its own pool).
    """

    def __init__(
        self,
        entry: str,
        *,
        size: int = 1,
        spares_after_loss: int = 0,
        env: dict[str, str] | None = None,
        memory_mb: int | None = None,
        entry_caps_memory: bool = False,
        recycle_after: int | None = None,
        retire: Callable[[Any], bool] | None = None,
        beat_interval_s: float = BEAT_INTERVAL_S,
        preload: Sequence[str] = (),
        warmup: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"WarmPool size must be at least 1, not {size}")
        if spares_after_loss < 0:
            raise ValueError(
                f"WarmPool spares_after_loss must be >= 0, not {spares_after_loss}"
            )
        self.entry = entry
        self.size = size
        self._spares_after_loss = spares_after_loss
        self.env = dict(env or {})
        self.memory_mb = memory_mb
        self.entry_caps_memory = entry_caps_memory
        self.recycle_after = recycle_after
        self.retire = retire
        self.beat_interval_s = beat_interval_s
        self.preload = tuple(preload)
        self.warmup = warmup
        self.replaced = 0  # children thrown away after a crash, hang, error or `retire`
        self._children: list[Child] = []
        self._closed = False
        self._fill()
        self._finalizer = weakref.finalize(self, _close_all, self._children)
        atexit.register(self._finalizer)

    def run(
        self,
        payload: dict[str, Any],
        *,
        timeout_s: float,
        heartbeat_s: float | None,
        memory_mb: int | None = None,
        more: bool = True,
    ) -> IsolatedOutcome:
        """Run one payload in a warm child; ``memory_mb`` overrides the pool's.

        ``more=False``: the caller expects no payload after this one but what it
        needs to finish it (the last case, then its crash file's repro script), so
        the pool keeps no spare ready: it starts at most one child where it would
        fill up to its size. A spare warming up then only took the cores from the
        child the caller is waiting for (a crashed last case's repro script).
        """
        if self._closed:
            raise RuntimeError("WarmPool is closed")
        memory_mb = memory_mb if memory_mb is not None else self.memory_mb

        def attempt(child: Child) -> IsolatedOutcome:
            return child.run(
                payload,
                timeout_s=timeout_s,
                heartbeat_s=heartbeat_s,
                memory_mb=memory_mb,
                entry_caps_memory=self.entry_caps_memory,
            )

        wanted = None if more else 1
        child = self._take(wanted)
        outcome = attempt(child)
        if _died_before_taking(child, outcome):
            # lost while idle, and seen only now (a killed child's other threads
            # still exiting when `_take` looked): the death is not the payload's,
            # which goes to a fresh child, once
            self._discard_lost(child)
            child = self._take(wanted)
            outcome = attempt(child)
        healthy = outcome.result is not None and child.proc.poll() is None
        if healthy and self.retire is not None and self.retire(outcome.result):
            healthy = False  # alive, but spoiled for every later payload
        recycle = self.recycle_after is not None and child.cases >= self.recycle_after
        if not healthy or recycle:
            self._children.remove(child)
            if not healthy:
                self._lost()
            self._fill(wanted)  # the replacement imports while the caller records
            child.close(graceful=healthy)
        return outcome

    def pids(self) -> list[int]:
        """Pids of the children currently held (for tests and diagnostics)."""
        return [c.pid for c in self._children]

    def close(self) -> None:
        """End every child and its process group; safe to call twice."""
        self._closed = True
        _close_all(self._children)

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take(self, wanted: int | None = None) -> Child:
        """A live child; children that died while idle are replaced first (up to
        `wanted` children held, the pool's size when None)."""
        for child in [c for c in self._children if c.proc.poll() is not None]:
            self._discard_lost(child)
        self._fill(wanted)
        return self._children[0]

    def _discard_lost(self, child: Child) -> None:
        """Forget a child that died outside any payload's doing, and count the loss."""
        self._children.remove(child)
        child.close(graceful=False)
        self._lost()

    def _lost(self) -> None:
        """Count a lost child; the first loss brings the spares (see the class)."""
        self.replaced += 1
        self.size += self._spares_after_loss
        self._spares_after_loss = 0

    def _fill(self, wanted: int | None = None) -> None:
        """Start children until the pool holds its size (or `wanted`, if fewer)."""
        target = self.size if wanted is None else min(wanted, self.size)
        while len(self._children) < target:
            self._children.append(
                Child(
                    self.entry,
                    env=self.env,
                    beat_interval_s=self.beat_interval_s,
                    preload=self.preload,
                    warmup=self.warmup,
                )
            )


def _died_before_taking(child: Child, outcome: IsolatedOutcome) -> bool:
    """Did a ready child end on its own before it began the payload handed to it?"""
    if outcome.result is not None or outcome.timed_out or outcome.hung:
        return False
    return child.handed_last and not child.began_last


def _close_all(children: list[Child]) -> None:
    while children:
        children.pop().close()


def _beat(heartbeat_s: float | None) -> float:
    """A heartbeat interval well inside the hang limit, never busier than 20 Hz."""
    if heartbeat_s is None:
        return BEAT_INTERVAL_S
    return max(0.05, min(BEAT_INTERVAL_S, heartbeat_s / 5))
