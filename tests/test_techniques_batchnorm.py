"""d2lpar.techniques.batchnorm: synchronised BatchNorm equals the one-device step on
the whole batch; local BatchNorm does not, and its statistics drift."""

import mxnet as mx
import numpy as onp
import pytest
from conftest import LR, make_batches
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.techniques import batchnorm as bn


def run(k, sync, batches, seed=0):
    devices = [mx.cpu(i) for i in range(k)]
    params, stats = bn.init_bn_mlp(seed)
    device_params, device_stats = bn.replicate_bn(params, stats, devices)
    for X, y in batches:
        bn.train_batch(
            X, y, device_params, device_stats, devices, LR, sync=sync
        )
    return (
        [[p.asnumpy() for p in ps] for ps in device_params],
        [[s.asnumpy() for s in ss] for ss in device_stats],
    )


def largest_gap(a, b):
    return max(onp.abs(x - y).max() for x, y in zip(a, b))


@pytest.mark.parametrize('k', [2, 3])
def test_sync_bn_equals_one_device(k):
    """Synchronised BN on k devices equals BN on one device with the
    whole batch: parameters and running statistics (rtol 1e-4, atol
    1e-5), uneven shards included."""
    batches = make_batches()
    params, stats = run(k, True, batches)
    ref_params, ref_stats = run(1, True, batches)
    start, _ = bn.init_bn_mlp(0)
    assert largest_gap(params[0], [p.asnumpy() for p in start]) > 1e-3
    for got, want in zip(params[0] + stats[0], ref_params[0] + ref_stats[0]):
        assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_local_and_sync_bn_agree_on_one_device():
    """On one device the shard is the batch: local and synchronised BN
    (two formulas for the variance) give the same steps (rtol 1e-4,
    atol 1e-5)."""
    batches = make_batches()
    local, local_stats = run(1, False, batches)
    synced, synced_stats = run(1, True, batches)
    for a, b in zip(local[0] + local_stats[0], synced[0] + synced_stats[0]):
        assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_sync_bn_keeps_statistics_bit_identical():
    """With synchronised BN every replica holds the same bits of the
    parameters and of the running statistics."""
    params, stats = run(3, True, make_batches())
    for d in (1, 2):
        for a, b in zip(params[0] + stats[0], params[d] + stats[d]):
            assert_array_equal(a, b)


def test_local_bn_differs_from_one_device():
    """Local BN normalises each shard with its own statistics: the step
    differs from the whole-batch step by far more than rounding."""
    batches = make_batches()
    params, _ = run(2, False, batches)
    ref_params, _ = run(1, False, batches)
    assert largest_gap(params[0], ref_params[0]) > 1e-3


def test_local_bn_params_agree_but_statistics_drift():
    """With local BN the summed gradients keep the parameters identical,
    but each replica's running statistics follow its own shards."""
    params, stats = run(2, False, make_batches())
    for a, b in zip(params[0], params[1]):
        assert_array_equal(a, b)
    assert largest_gap(stats[0], stats[1]) > 1e-3


def test_evaluate_bn_uses_the_running_statistics():
    """Two replicas with identical parameters but different running
    statistics can score differently; the same stats give the same
    accuracy as a direct computation."""
    params, stats = bn.init_bn_mlp(0)
    X, y = make_batches(sizes=(40,))[0]
    acc = bn.evaluate_bn(params, stats, [(X, y)], mx.cpu(0))
    logits = bn.bn_mlp(X, params, stats).asnumpy()
    assert acc == (logits.argmax(axis=1) == y.asnumpy()).mean()


@pytest.mark.parametrize('k', [1, 3])
def test_local_bn_step_is_train_batch_with_each_shards_moments(k):
    """Local BatchNorm is a per-device network (each shard normalised
    with its own moments), so batchnorm.train_batch with sync=False
    equals dp.train_batch given that network, bit for bit: one skeleton
    (training.device_gradients, sum_gradients, sgd) under both."""

    def local_bn(X, params):
        h = dp.model.dense(X.reshape(X.shape[0], -1), params[0])
        return bn._head(h, params, bn.batch_moments([h], sync=False)[0])

    devices = [mx.cpu(i) for i in range(k)]
    params, stats = bn.init_bn_mlp(0)
    ours, device_stats = bn.replicate_bn(params, stats, devices)
    want = [dp.get_params(params, d) for d in devices]
    for X, y in make_batches():
        bn.train_batch(X, y, ours, device_stats, devices, LR)
        dp.train_batch(X, y, want, devices, LR, net=local_bn)
    for p, q in zip(ours[0], want[0]):
        assert_array_equal(p.asnumpy(), q.asnumpy())
    assert largest_gap([p.asnumpy() for p in ours[0]],
                       [p.asnumpy() for p in params]) > 1e-3  # fmt: skip
