"""Run a function in a forked child process and bring back its JSON result, or how
the child died.

Calls built from a schema alone (`overload_inputs`) reach private kernels with
inputs no caller would pass, and some of them crash the interpreter (a segfault in
CPU's own kernel). The index build tries each such candidate in a fork, so a crash
costs that candidate, not the build. A fork inherits the imported torch, so a child
costs milliseconds, not an import.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from typing import Any

import torch

TIMEOUT_S = 20.0


def _child(fn: Callable[[], Any], conn: Any) -> None:
    # the parent's intra-op thread pool does not survive the fork (a parallel
    # kernel would wait on threads that do not exist): run kernels inline, as
    # PyTorch's own DataLoader workers do
    torch.set_num_threads(1)
    conn.send(json.dumps(fn()))
    conn.close()


def run_forked(fn: Callable[[], Any], timeout_s: float = TIMEOUT_S) -> Any:
    """`fn()`'s JSON-able result, computed in a forked child. RuntimeError naming the
    signal or exit status when the child dies without a result, or the timeout."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(fn, send), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(timeout_s):
            return json.loads(receive.recv())
    except EOFError:
        pass
    finally:
        receive.close()
        child.join(timeout=1.0)
        if child.is_alive():
            child.kill()
            child.join()
    code = child.exitcode
    if code is None or code == 0:
        raise RuntimeError(f"no result within {timeout_s:.0f} s")
    if code < 0:
        raise RuntimeError(f"the process died of signal {-code}")
    raise RuntimeError(f"the process exited with status {code}")
