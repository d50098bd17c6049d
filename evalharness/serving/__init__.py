"""Serving a cell: the engine server's process lifecycle (server.py: launch, readiness, teardown; processes.py: finding
an engine's processes; host.py: ports and GPU memory), the engines (engines/: sglang, vllm, external; argv,
readiness path, resolved configuration, log rules) and the log knowledge shared by engines (logscan.py).

May import matrix (an engine turns a cell into a launch plan) and records; must not import phases, analysis, render
or the runner.
"""
