"""Server lifecycle on small real processes that misbehave in ways an engine does only sometimes: children that leave
the process group, ignore SIGTERM, or detach before the harness ever sees them. (The real engine is in
tests/integration.)"""

import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from evalharness.serving.host import free_port
from evalharness.serving.processes import processes_with_marker
from evalharness.serving.server import LaunchError, ServerProcess

STUBBORN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # a child in a session of its own (outside our process group) that also ignores SIGTERM
    subprocess.Popen([sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
                     start_new_session=True)
    # a grandchild that detaches at once: its parent exits, so it is reparented before anyone can list it
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(600)
        os._exit(0)
    print("started", flush=True)
    time.sleep(600)
""")


def _server(tmp_path, argv, health="http://127.0.0.1:9/health"):
    return ServerProcess(argv, {"STUB": "1"}, tmp_path / "server.log", health)


def test_teardown_kills_children_that_left_the_group_and_ignore_sigterm(tmp_path):
    server = _server(tmp_path, [sys.executable, "-c", STUBBORN])
    server.start()
    deadline = time.monotonic() + 20
    while len(processes_with_marker(server.marker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    family = processes_with_marker(server.marker)
    assert len(family) == 3, [p.cmdline() for p in family]
    readiness = server.wait_ready(timeout_s=0.5)
    assert readiness.outcome == "timeout"
    torn = server.stop(grace_s=1.0)
    assert torn.signals == ["SIGTERM", "SIGKILL"]
    assert torn.leftover == []
    assert len(torn.killed_stragglers) == 2  # the session-leaving child and the detached grandchild
    assert processes_with_marker(server.marker) == []
    assert not any(psutil.pid_exists(p.pid) and p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family)
    assert "started" in (tmp_path / "server.log").read_text()
    assert server.stop() is torn  # idempotent


def test_process_death_is_noticed_at_once(tmp_path):
    server = _server(tmp_path, [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"])
    server.start()
    readiness = server.wait_ready(timeout_s=60)
    assert readiness.outcome == "exited" and readiness.returncode == 3 and readiness.seconds < 10
    assert server.stop().leftover == []


def test_ready_when_health_answers(tmp_path):
    port = free_port()
    server = _server(tmp_path, [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                     health=f"http://127.0.0.1:{port}/")
    server.start()
    try:
        readiness = server.wait_ready(timeout_s=30)
        assert readiness.outcome == "ready"
    finally:
        torn = server.stop(grace_s=5)
    assert torn.signals == ["SIGTERM"] and torn.leftover == []


def test_missing_binary_is_a_launch_error(tmp_path):
    with pytest.raises(LaunchError, match="no-such-engine"):
        _server(tmp_path, ["/nonexistent/no-such-engine", "--flag"]).start()


def test_a_foreign_server_answering_on_our_port_is_never_ready(tmp_path):
    """Another process holds the port and answers the health URL (SGLang's launcher printed "fired up" in that case,
    its warm-up answered by the old server): the launched server never bound it, so it is not ready."""
    port = free_port()
    foreign = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections("tcp")):
            time.sleep(0.1)
        server = _server(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"],
                         health=f"http://127.0.0.1:{port}/")
        server.start()
        try:
            readiness = server.wait_ready(timeout_s=3)
        finally:
            assert server.stop(grace_s=5).leftover == []
        assert readiness.outcome == "timeout" and readiness.foreign_listener == foreign.pid
    finally:
        foreign.kill()
        foreign.wait()


SLOW_HEALTH = textwrap.dedent("""
    import http.server, sys, time
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(3)  # SGLang's /health_generate: a one-token generation, 1-4 s on this CPU
            self.send_response(200); self.end_headers()
        def log_message(self, *args):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
""")


def test_a_health_answer_slower_than_two_seconds_is_still_readiness(tmp_path):
    port = free_port()
    server = _server(tmp_path, [sys.executable, "-c", SLOW_HEALTH, str(port)], health=f"http://127.0.0.1:{port}/")
    server.start()
    try:
        readiness = server.wait_ready(timeout_s=20)
    finally:
        assert server.stop(grace_s=5).leftover == []
    assert readiness.outcome == "ready"
