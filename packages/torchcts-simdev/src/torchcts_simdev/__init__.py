"""simdev: a pure-Python PrivateUse1 reference backend with fault injection, for exercising TorchCTS anywhere."""

__version__ = "0.1.0"
