"""Crash isolation for TorchCTS: child interpreters, watchdog, known-crash ledger and
adaptive isolation. Imports neither torch nor pytest.

Isolation only decides where a case executes; how it ended keeps its meaning.
"""

from torchcts_isolate.outcome import IsolatedOutcome, signal_name
from torchcts_isolate.pool import WarmPool, run_isolated

__version__ = "0.1.0"

__all__ = [
    "IsolatedOutcome",
    "WarmPool",
    "run_isolated",
    "signal_name",
]
