"""The client's event loop (phases/throughput/eventloop.py): a signal whose Python handler raises stops the scenario
and raises in the caller, on uvloop as on plain asyncio; the caller's handler is back afterwards."""

import asyncio
import os
import signal
import threading

import pytest

from evalharness.phases.throughput import eventloop


class Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise Stop(signum)


@pytest.fixture(params=["uvloop", "asyncio"])
def loop_kind(request, monkeypatch):
    if request.param == "asyncio":
        monkeypatch.setattr(eventloop, "_new_loop", asyncio.new_event_loop)
    else:
        pytest.importorskip("uvloop")
    return request.param


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_loop_raises_the_handlers_exception(loop_kind, sig):
    previous = signal.signal(sig, _raise_stop)
    try:
        async def long_scenario():
            workers = [asyncio.create_task(asyncio.sleep(30)) for _ in range(4)]
            await asyncio.gather(*workers)

        threading.Timer(0.3, os.kill, (os.getpid(), sig)).start()
        with pytest.raises(Stop):
            eventloop.run_loop(long_scenario())
        assert signal.getsignal(sig) is _raise_stop  # the caller's handler is back
    finally:
        signal.signal(sig, previous)


def test_a_handler_that_defers_lets_the_scenario_finish(loop_kind):
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        async def short_scenario():
            await asyncio.sleep(0.6)
            return "done"

        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        assert eventloop.run_loop(short_scenario()) == "done" and seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_result_comes_back():
    async def answer():
        return 42

    assert eventloop.run_loop(answer()) == 42
