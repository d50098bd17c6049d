"""Pure parts of teardown and the GPU-memory gate (the behaviour end to end: tests/contract)."""

import pytest

from evalharness.runner.cellphases import server_vs_client
from evalharness.runner.teardown import refuse_if_gpu_held
from evalharness.serving.host import gpu_memory_held


@pytest.mark.parametrize("now,reference,held", [
    ([1000, 1000], [1000, 1000], []),
    ([2000, 1000], [1000, 1000], []),       # within the 1024 MiB slack
    ([90000, 1000], [1000, 1000], [89000, 0]),
    (None, [1000], []),                     # no nvidia-smi: nothing to say
    ([5000], None, []),
])
def test_gpu_memory_held(now, reference, held):
    assert gpu_memory_held(now, reference) == held


def test_a_clean_gpu_is_never_waited_for():
    assert refuse_if_gpu_held([1000], [1000], wait_s=3600) == ([1000], None)
    assert refuse_if_gpu_held(None, None, wait_s=3600) == (None, None)


@pytest.mark.parametrize("server,client,share,flagged", [
    (100.0, 100.0, None, False), (108.0, 100.0, None, False), (115.0, 100.0, None, True), (50.0, 100.0, None, True),
    # a fifth of each request was prefill: the client's 80 tok/s is 100 tok/s of decoding, as the server says
    (100.0, 80.0, 0.8, False), (100.0, 80.0, None, True), (200.0, 80.0, 0.8, True),
])
def test_server_and_client_throughput_compared(server, client, share, flagged):
    got = server_vs_client({"server_gen_tok_s_median": server}, client, share)
    assert got["throughput_disagreement"] is flagged
    assert got["server_client_ratio"] == round(server / (client / (share or 1.0)), 3)
    assert server_vs_client({}, client) == {}
