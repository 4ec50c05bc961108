"""Conformance cases from PyTorch OpInfo and hand-written suites, expected-result sources and manifest selection."""

__version__ = "0.1.0"
