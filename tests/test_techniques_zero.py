"""d2lpar.techniques.zero: the sharded optimizer step equals the unsharded one, holds
1/k of the state, and moves the bytes of one allreduce."""

import mxnet as mx
import numpy as onp
import pytest
from conftest import make_batches
from mxnet import np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.comm import schedules
from d2lpar.techniques import optim, zero


def replicas(k, seed=1):
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=seed, scale=0.1)
    return devices, [dp.get_params(start, d) for d in devices]


@pytest.mark.parametrize('k', [1, 2, 3, 4])
def test_schedules_compose_to_an_allreduce(k):
    """After the reduce-scatter device i holds the full sum of chunk i;
    the all-gather then completes an allreduce (checked on paper with
    trace and on real arrays with run_schedule)."""
    rs, ag = (
        schedules.reduce_scatter_schedule(k),
        schedules.all_gather_schedule(k),
    )
    after_rs = schedules.trace(rs, k)[-1]
    assert [after_rs[i][i] for i in range(k)] == [k] * k
    assert schedules.trace(rs + ag, k)[-1] == [[k] * k] * k
    rng = onp.random.default_rng(0)
    values = [rng.uniform(size=11).astype('float32') for _ in range(k)]
    data = [np.array(v, ctx=mx.cpu(i)) for i, v in enumerate(values)]
    dp.run_schedule(data, rs)
    for i, (start, stop) in enumerate(dp.splitting.shard_ranges(11, k)):
        assert_allclose(
            data[i].asnumpy()[start:stop], sum(values)[start:stop], rtol=1e-6
        )
    dp.run_schedule(data, ag)
    for d in data:
        assert_allclose(d.asnumpy(), sum(values), rtol=1e-6)


@pytest.mark.parametrize('k', [2, 3, 4, 8])
def test_bytes_moved_equal_a_ring_allreduce(k):
    """Reduce-scatter plus all-gather move exactly the ring allreduce's
    bytes in total; per device too when k divides the size (otherwise
    the renumbered chunks put the larger ones on other devices)."""

    def moved(n):
        rs = schedules.traffic(schedules.reduce_scatter_schedule(k), k, n)
        ag = schedules.traffic(schedules.all_gather_schedule(k), k, n)
        ring = schedules.traffic(schedules.ring_schedule(k), k, n)
        return (
            [[a + b for a, b in zip(rs[w], ag[w])] for w in (0, 1)],
            list(ring),
        )

    ours, ring = moved(1001)
    assert [sum(x) for x in ours] == [sum(x) for x in ring]
    ours, ring = moved(840)  # 840 divides by 2, 3, 4 and 8
    assert ours == ring


@pytest.mark.parametrize('k', [2, 3, 4])
@pytest.mark.parametrize(
    'make', [lambda: optim.Momentum(0.1), lambda: optim.Adam(0.01)]
)
def test_zero_step_equals_unsharded_step(k, make):
    """Every ZeRO-1 step equals the same step with the full state on
    every device (rtol 1e-4, atol 1e-5), uneven shards included: each
    step starts both runs from the same parameters, so one step's
    rounding cannot grow through the next steps' gradients (the states
    run on, fed by gradients of equal parameters). The replicas are
    bit-identical after every step, and the steps move the weights."""
    batches = make_batches()
    devices, sharded = replicas(k)
    _, full = replicas(k)
    optimizer = make()
    zstates = zero.init_zero_states(optimizer, sharded)
    fstates = optim.init_states(optimizer, full)
    for X, y in batches:
        for replica, reference in zip(sharded, full):
            for p, q in zip(replica, reference):
                p[:] = q
        zero.train_batch(X, y, sharded, zstates, devices, optimizer)
        optim.train_batch(X, y, full, fstates, devices, optimizer)
        for replica in sharded[1:]:
            for p, q in zip(sharded[0], replica):
                assert_array_equal(p.asnumpy(), q.asnumpy())
        for p, q in zip(sharded[0], full[0]):
            assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-4, atol=1e-5)
    start = dp.init_lenet_params(seed=1, scale=0.1)
    assert (
        max(
            onp.abs(p.asnumpy() - s.asnumpy()).max()
            for p, s in zip(sharded[0], start)
        )
        > 1e-3
    )


@pytest.mark.parametrize('k', [1, 2, 3, 4])
def test_state_per_device_is_one_kth(k):
    """Adam's sharded state on device j is 2 x 4 bytes per element of
    chunk j: the full state divided over k devices, with no overlap."""
    _, device_params = replicas(k)
    n = sum(p.size for p in device_params[0])
    per_device = optim.state_bytes(
        zero.init_zero_states(optim.Adam(0.1), device_params)
    )
    assert per_device == [8 * size for size in dp.shard_sizes(n, k)]
    assert sum(per_device) == 8 * n


def test_states_live_on_their_devices():
    """Device j's shard of the state is allocated on device j."""
    devices, device_params = replicas(3)
    states = zero.init_zero_states(optim.Adam(0.1), device_params)
    assert [s[0]['m'].ctx for s in states] == devices


def test_pack_unpack_round_trip():
    """unpack(pack(arrays)) restores every array exactly."""
    arrays = dp.init_lenet_params(seed=4, scale=0.1)
    buffer = zero.pack(arrays)
    assert buffer.shape == (sum(a.size for a in arrays),)
    targets = [np.zeros(a.shape) for a in arrays]
    zero.unpack(buffer, targets)
    for a, t in zip(arrays, targets):
        assert_array_equal(a.asnumpy(), t.asnumpy())


def test_mismatched_states_are_refused():
    """Passing states for a different number of devices fails early."""
    devices, device_params = replicas(2)
    X, y = make_batches(sizes=(4,))[0]
    with pytest.raises(ValueError, match='1 states and 2 devices'):
        zero.train_batch(X, y, device_params, [[{}]], devices, optim.SGD(0.1))
