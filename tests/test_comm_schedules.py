"""d2lpar.comm.schedules: who sends what, checked against the real copies."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np

from d2lpar.comm import ALGORITHMS, schedules
from d2lpar.comm.costmodel import busiest_bytes
from d2lpar.comm.schedules import SCHEDULES


@pytest.mark.parametrize('name', SCHEDULES)
@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
def test_trace_ends_with_every_contribution_everywhere(name, k):
    """Replaying any schedule leaves every chunk on every device holding
    all k contributions, and it starts with each device's own only."""
    states = schedules.trace(SCHEDULES[name](k), k)
    assert states[0] == [[1] * k for _ in range(k)]
    assert states[-1] == [[k] * k for _ in range(k)]


def test_ring_only_talks_to_neighbours():
    """In the ring every transfer goes from device i to device i+1."""
    for k in (2, 3, 4, 8):
        for step in schedules.ring_schedule(k):
            assert sorted(t.src for t in step) == list(range(k))
            assert all(t.dst == (t.src + 1) % k for t in step)


@pytest.mark.parametrize('name', SCHEDULES)
@pytest.mark.parametrize('k', [1, 2, 3, 4, 5, 6, 8, 16])
def test_busiest_device_moves_the_textbook_bytes(name, k):
    """The busiest device sends and receives exactly the bytes the cost
    model states (costmodel.busiest_bytes), for an array k divides."""
    n = 240 * 7
    sent, received = schedules.traffic(SCHEDULES[name](k), k, n)
    assert max(sent) == max(received) == busiest_bytes(name, k, 4 * n)


@pytest.mark.parametrize('k, n', [(4, 1003), (8, 129068), (3, 2)])
def test_uneven_chunks_differ_by_one_element(k, n):
    """When k does not divide the array, ring and sharded devices each
    move within one element per message of the textbook's 2(k-1)N/k."""
    for name in ('ring', 'sharded'):
        sent, received = schedules.traffic(SCHEDULES[name](k), k, n)
        for b in sent + received:
            assert abs(b - busiest_bytes(name, k, 4 * n)) <= 2 * (k - 1) * 4


def test_naive_loads_device_0():
    """Naive: device 0 moves (k-1)N each way, the others N."""
    k, n = 4, 1000
    sent, received = schedules.traffic(schedules.naive_schedule(k), k, n)
    assert sent[1:] == received[1:] == [4 * n] * (k - 1)
    assert sent[0] == received[0] == 4 * n * (k - 1)


def test_doubling_swaps_in_pairs():
    """Recursive doubling: log2(k) swap steps in which every transfer
    i -> j that adds has its mirror j -> i; when k is no power of two a
    fold step before and an unfold step after."""
    for k in (2, 3, 4, 5, 6, 8, 16):
        steps = schedules.doubling_schedule(k)
        swaps = k.bit_length() - 1
        folded = k != 1 << swaps
        assert len(steps) == swaps + 2 * folded
        for step in steps[folded : len(steps) - folded]:
            pairs = {(t.src, t.dst) for t in step}
            assert all(t.reduce for t in step)
            assert pairs == {(j, i) for i, j in pairs}


@pytest.mark.parametrize('name', SCHEDULES)
@pytest.mark.parametrize('k, n', [(2, 10), (3, 10), (4, 7), (4, 2)])
def test_traffic_matches_real_copies(name, k, n, monkeypatch):
    """The bytes traffic() predicts are the bytes the implementation
    really copies between devices, per device (counted by wrapping
    ndarray.copyto)."""
    sent, received = [0] * k, [0] * k

    def counting(original):
        def copyto(self, other):
            dst = other if isinstance(other, mx.Context) else other.ctx
            if dst != self.ctx:
                nbytes = self.size * onp.dtype(self.dtype).itemsize
                sent[self.ctx.device_id] += nbytes
                received[dst.device_id] += nbytes
            return original(self, other)

        return copyto

    data = [
        np.array(onp.arange(n) * (i + 1), dtype='float32', ctx=mx.cpu(i))
        for i in range(k)
    ]
    # Both array classes: mxnet.numpy's (naive) and the legacy NDArray
    # views run_schedule copies between.
    for cls in (np.ndarray, mx.nd.NDArray):
        monkeypatch.setattr(cls, 'copyto', counting(cls.copyto))
    ALGORITHMS[name](data)
    monkeypatch.undo()
    assert (sent, received) == schedules.traffic(SCHEDULES[name](k), k, n)
    for a in data:
        onp.testing.assert_allclose(
            a.asnumpy(), onp.arange(n) * k * (k + 1) / 2
        )


@pytest.mark.parametrize('name', SCHEDULES)
@pytest.mark.parametrize('k', [2, 3, 4, 5, 8])
def test_no_overwrite_touches_what_its_step_reads(name, k):
    """run_schedule's contract: within a step, no overwriting transfer
    writes a (device, chunk) that another transfer of the step reads
    (additions are buffered, so swaps that add are allowed)."""
    for step in SCHEDULES[name](k):

        def chunks(t):
            return range(k) if t.chunk is None else [t.chunk]

        reads = {(t.src, c) for t in step for c in chunks(t)}
        writes = {(t.dst, c) for t in step if not t.reduce for c in chunks(t)}
        assert not reads & writes
