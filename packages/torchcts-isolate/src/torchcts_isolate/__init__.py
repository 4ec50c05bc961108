"""Crash isolation for TorchCTS: child interpreters, watchdog, known-crash ledger and
adaptive isolation. Imports neither torch nor pytest.

Isolation only decides where a case executes; how it ended keeps its meaning.
"""

from torchcts_isolate.adaptive import (
    AdaptiveDecisions,
    adaptive_path,
    decide_adaptive,
    write_adaptive_decisions,
)
from torchcts_isolate.audit import AuditResult, KnownCase, audit, load_case_list
from torchcts_isolate.child import exit_without_teardown, memory_limit
from torchcts_isolate.crash_record import (
    crash_dir,
    crash_record_path,
    read_crash_record,
    safe_case_name,
    write_crash_record,
)
from torchcts_isolate.ending import (
    EXTERNAL_SIGNALS,
    HARD_TIMEOUT_EXIT,
    ProcessEnding,
    crash_for,
    may_be_external,
    signal_name,
)
from torchcts_isolate.ledger import (
    Ledger,
    LedgerRule,
    load_ledger,
    packaged_ledger_path,
    project_ledger_path,
)
from torchcts_isolate.outcome import IsolatedOutcome
from torchcts_isolate.pool import WarmPool, run_isolated

__version__ = "0.1.0"

__all__ = [
    "EXTERNAL_SIGNALS",
    "HARD_TIMEOUT_EXIT",
    "AdaptiveDecisions",
    "AuditResult",
    "IsolatedOutcome",
    "KnownCase",
    "Ledger",
    "LedgerRule",
    "ProcessEnding",
    "WarmPool",
    "adaptive_path",
    "audit",
    "crash_dir",
    "crash_for",
    "crash_record_path",
    "decide_adaptive",
    "exit_without_teardown",
    "load_case_list",
    "load_ledger",
    "may_be_external",
    "memory_limit",
    "packaged_ledger_path",
    "project_ledger_path",
    "read_crash_record",
    "run_isolated",
    "safe_case_name",
    "signal_name",
    "write_adaptive_decisions",
    "write_crash_record",
]
