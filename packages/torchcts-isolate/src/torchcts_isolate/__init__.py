"""Crash isolation for TorchCTS: child interpreters, watchdog, known-crash ledger and adaptive isolation."""

__version__ = "0.1.0"
