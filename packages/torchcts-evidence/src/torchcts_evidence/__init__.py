"""TorchCTS evidence submission: archives and verification, backend evidence store, crash candidates."""

__version__ = "0.1.0"
