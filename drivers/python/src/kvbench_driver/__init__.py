"""kvbench_driver: the Python worker of kvbench.

It executes one job (one engine, one plan) and streams the JSON Lines events of the worker
protocol on stdout, exactly as the Rust worker does (see docs/protocol.md and
docs/plan-format.md at the top of the repository).
"""

__version__ = "0.1.0"
