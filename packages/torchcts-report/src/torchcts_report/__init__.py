"""TorchCTS reports from result artifacts: markdown scorecard, HTML, JUnit XML, diff and shard merge."""

__version__ = "0.1.0"
