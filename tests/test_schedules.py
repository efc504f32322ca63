"""d2lpar.schedules: who sends what, checked against the real copies."""
import mxnet as mx
import numpy as onp
import pytest
from mxnet import np

import d2lpar as dp
from d2lpar import schedules

SCHEDULES = {'naive': schedules.naive_schedule,
             'sharded': schedules.sharded_schedule,
             'ring': schedules.ring_schedule}
RUN = {'naive': dp.allreduce, 'sharded': dp.sharded_allreduce,
       'ring': dp.ring_allreduce}


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


@pytest.mark.parametrize('k, n', [(2, 1000), (4, 1000), (4, 1003),
                                  (8, 129068)])
def test_textbook_traffic(k, n):
    """Naive: device 0 moves (k-1)N in and out, the others N; ring and
    sharded: each device sends and receives 2(k-1)/k N (to a chunk when
    N does not divide by k)."""
    N = 4 * n
    sent, received = schedules.traffic(schedules.naive_schedule(k), k, n)
    assert sent[0] == received[0] == (k - 1) * N
    assert sent[1:] == received[1:] == [N] * (k - 1)
    for name in ('ring', 'sharded'):
        sent, received = schedules.traffic(SCHEDULES[name](k), k, n)
        assert sum(sent) == sum(received) == 2 * (k - 1) * N
        for b in sent + received:
            assert abs(b - 2 * (k - 1) * N / k) <= 2 * (k - 1) * 4


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

    data = [np.array(onp.arange(n) * (i + 1), dtype='float32',
                     ctx=mx.cpu(i)) for i in range(k)]
    # Both array classes: mxnet.numpy's (naive) and the legacy NDArray
    # views run_schedule copies between.
    for cls in (np.ndarray, mx.nd.NDArray):
        monkeypatch.setattr(cls, 'copyto', counting(cls.copyto))
    RUN[name](data)
    monkeypatch.undo()
    assert (sent, received) == schedules.traffic(SCHEDULES[name](k), k, n)
    for a in data:
        onp.testing.assert_allclose(a.asnumpy(),
                                    onp.arange(n) * k * (k + 1) / 2)


@pytest.mark.parametrize('name', SCHEDULES)
@pytest.mark.parametrize('k', [2, 3, 4, 8])
def test_no_transfer_reads_what_its_step_writes(name, k):
    """run_schedule's contract: within a step, no transfer writes a
    (device, chunk) that another transfer of the step reads."""
    for step in SCHEDULES[name](k):
        chunks = lambda t: range(k) if t.chunk is None else [t.chunk]
        reads = {(t.src, c) for t in step for c in chunks(t)}
        writes = {(t.dst, c) for t in step for c in chunks(t)}
        assert not reads & writes
