"""The run's defaults, in a module with no imports, so that option registration
(pytest loads the plugin in every pytest process) and isolation children can both
name them without loading anything else."""

from __future__ import annotations

DEFAULT_CASE_SOURCE = "torchcts_cases"
DEFAULT_CASE_TIMEOUT_S = 120.0
ISOLATE_MODES = ("none", "ledger", "adaptive", "all")
DEFAULT_ISOLATE = "adaptive"  # the contract's default: ledger rules plus adaptive

__all__ = [
    "DEFAULT_CASE_SOURCE",
    "DEFAULT_CASE_TIMEOUT_S",
    "DEFAULT_ISOLATE",
    "ISOLATE_MODES",
]
