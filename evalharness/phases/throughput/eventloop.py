"""The load client's event loop: uvloop where it is installed, plain asyncio otherwise, with the process's Python
signal handlers routed through the loop so that they work under both.

Why uvloop: benchmarks/client_capacity.py, paced regime (one event per stream per server write, as engines write),
2026-11-30 on this project's 2-core EPYC, each figure the median of 3 rounds side by side with vLLM's client in one run:
64 streams at 13,600 events/s, 12.8 us of CPU per event on asyncio against vLLM's client's 22.7 (1.77x less), 9.9
against 21.6 on uvloop (2.18x); 256 streams at 100,000 events/s, 8.5 against 11.5 on asyncio (1.36x), 7.1 against
11.5 on uvloop (1.61x), where vLLM's client saturated its core and fell behind the server and ours did not.

Why the routing: a Python signal handler that raises (the runner's Interrupted, Ctrl-C's KeyboardInterrupt) is called
by uvloop inside its own callback, which logs the exception ("Exception in callback Loop._read_from_self") and goes
on, so Ctrl-C or SIGTERM during a scenario would be lost instead of tearing the engine down. Here each callable Python
handler is installed as the loop's signal handler instead: it runs in a loop callback, whatever it raises is kept, the
main task is cancelled, and the exception is raised from `run_loop` in the caller's frame, as on plain asyncio.
Imports nothing of evalharness.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any, Coroutine

ROUTED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # optional at runtime: the harness works on plain asyncio, at more CPU per event
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_loop(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run the coroutine to completion on a fresh loop; a signal whose Python handler raises cancels it and the
    handler's exception is raised here."""
    loop = _new_loop()
    raised: list[BaseException] = []
    routed: list[tuple[int, Any]] = []
    task = loop.create_task(coroutine)

    def on_signal(signum: int, handler: Any) -> None:
        try:
            handler(signum, None)  # the runner's handler: raises Interrupted, or defers it and returns
        except BaseException as exc:  # noqa: BLE001 - whatever the handler raises is the caller's to see
            raised.append(exc)
            task.cancel()

    if threading.current_thread() is threading.main_thread():
        for sig in ROUTED:
            handler = signal.getsignal(sig)
            if callable(handler):  # SIG_DFL and SIG_IGN stay as they are
                loop.add_signal_handler(sig, on_signal, sig, handler)
                routed.append((sig, handler))
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if raised:
            raise raised[0] from None
        raise
    finally:
        for sig, handler in routed:
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)  # remove_signal_handler leaves the default: the caller's handler comes back
        try:
            _cancel_the_rest(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop) -> None:
    """What asyncio.run does on the way out: cancel the tasks still pending and let them finish."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
