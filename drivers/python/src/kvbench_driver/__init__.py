"""kvbench_driver: the Python worker of kvbench (docs/protocol.md, docs/plan-format.md)."""

__version__ = "0.1.0"
