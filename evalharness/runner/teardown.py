"""A cell's server going away: the engine's teardown style, the wait for its GPU memory, and what a machine that is
not clean means for this cell and for the next one.

Teardown is the engine's data (`Engine.terminate`), never a branch on its name: SGLang SIGTERMs its launcher alone,
vLLM its whole group (serving/server.py). Then, where nvidia-smi exists, the wait for GPU memory to come back to its
level before launch, bounded by `timeouts.gpu_release_s` (SGLang's own tests wait 60 s: a reaped process's memory is
freed by the driver later). A cell that would start while an earlier server's memory is still held is refused with
that reason, so it is never mistaken for an out_of_memory crash of its own configuration.
"""

from __future__ import annotations

import time

from evalharness.matrix.schema import Timeouts
from evalharness.records.run import TeardownRecord
from evalharness.serving.host import SLACK_MIB, gpu_memory_held, gpu_memory_released
from evalharness.serving.server import ServerProcess


def tear_down(server: ServerProcess, terminate: str, timeouts: Timeouts,
              gpu_before: list[int] | None) -> TeardownRecord:
    """Stop the server the engine's way, then wait (bounded) for its GPU memory; the record says how it went."""
    torn = server.stop(timeouts.teardown_grace_s, terminate=terminate)
    begin = time.monotonic()
    after = gpu_memory_released(gpu_before, wait_s=timeouts.gpu_release_s)
    waited = round(time.monotonic() - begin, 2) if gpu_before is not None else None
    return torn.model_copy(update={"gpu_memory_before_mib": gpu_before, "gpu_memory_after_mib": after,
                                   "gpu_release_wait_s": waited})


def refuse_if_gpu_held(now: list[int] | None, baseline: list[int] | None,
                       wait_s: float) -> tuple[list[int] | None, str | None]:
    """Before a launch: (the GPU memory reading to record as this cell's 'before', a reason to refuse the cell or
    None). Memory above the run's baseline (read before its first launch) is waited for up to `wait_s`."""
    if not gpu_memory_held(now, baseline):
        return now, None
    now = gpu_memory_released(baseline, wait_s=wait_s)
    held = gpu_memory_held(now, baseline)
    if not held:
        return now, None
    return now, (f"not launched: GPU memory still held from an earlier server ({held} MiB per GPU above the level "
                 f"before the run's first launch, after waiting {wait_s:.0f}s); a launch now could fail with a false "
                 "out_of_memory. Check `nvidia-smi` for leftover processes, then run again with --resume")


def after_teardown(status: str, reason: str | None, leftover: list[int], held_mib: list[int],
                   slack_mib: int = SLACK_MIB) -> tuple[str, str | None]:
    """A cell's status and reason once its server is torn down (pure). What teardown left (processes, GPU memory)
    is added to the reason; it never replaces a more specific verdict: a crashed, garbage or timed-out cell keeps its
    status, and only a cell that was ok becomes error, because its machine is no longer clean for the next cell."""
    found = []
    if any(h > slack_mib for h in held_mib):
        found.append(f"GPU memory not released after teardown: {held_mib} MiB more per GPU")
    if leftover:
        found.append(f"engine processes left behind after teardown: {leftover}")
        if status == "ok":
            status = "error"
    return status, "; ".join([*([reason] if reason else []), *found]) or None
