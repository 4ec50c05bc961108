"""The TorchCTS pytest plugin: cases as pytest items, execution, classification, journal, probes, resume."""

__version__ = "0.1.0"
