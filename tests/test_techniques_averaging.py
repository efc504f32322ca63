"""d2lpar.techniques.averaging: parameter averaging after one local step is the
gradient-averaging step; local SGD communicates once per H steps."""

import mxnet as mx
import numpy as onp
import pytest
from conftest import LR, make_batches, write_fashion_dir
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.comm import schedules
from d2lpar.techniques import averaging


def replicas(k, seed=1):
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=seed, scale=0.1)
    return devices, [dp.get_params(start, d) for d in devices]


@pytest.mark.parametrize(
    'k, sizes, weighted',
    [
        (2, (12, 8, 10), False),  # equal shards: a plain mean is enough
        (3, (12, 11, 7), True),  # uneven shards need shard-size weights
        (4, (12, 13, 9), True),
    ],
)
def test_parameter_averaging_equals_gradient_averaging(k, sizes, weighted):
    """Local SGD steps each followed by parameter averaging (weighted by
    shard size when shards differ) equal train_batch's gradient steps
    (rtol 1e-5, atol 1e-6), and the replicas are bit-identical."""
    batches = make_batches(sizes=sizes)
    devices, averaged = replicas(k)
    _, reference = replicas(k)
    for X, y in batches:
        weights = averaging.local_sgd_step(X, y, averaged, devices, LR)
        averaging.average_params(averaged, weights if weighted else None)
        dp.train_batch(X, y, reference, devices, LR)
        for replica in averaged[1:]:
            for p, q in zip(averaged[0], replica):
                assert_array_equal(p.asnumpy(), q.asnumpy())
    for p, q in zip(averaged[0], reference[0]):
        assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)


def test_unweighted_average_of_uneven_shards_differs():
    """With uneven shards a plain mean is not the gradient step: the
    weights matter (the difference is far above float rounding)."""
    X, y = make_batches(sizes=(7,))[0]  # shards of 3, 2 and 2
    devices, averaged = replicas(3)
    _, reference = replicas(3)
    averaging.local_sgd_step(X, y, averaged, devices, LR)
    averaging.average_params(averaged)
    dp.train_batch(X, y, reference, devices, LR)
    gap = max(
        onp.abs(p.asnumpy() - q.asnumpy()).max()
        for p, q in zip(averaged[0], reference[0])
    )
    assert gap > 1e-4


def test_local_steps_let_replicas_drift():
    """Without averaging, replicas that saw different shards differ."""
    X, y = make_batches(sizes=(12,))[0]
    devices, device_params = replicas(2)
    averaging.local_sgd_step(X, y, device_params, devices, LR)
    gap = max(
        onp.abs(p.asnumpy() - q.asnumpy()).max()
        for p, q in zip(*device_params)
    )
    assert gap > 1e-4


def test_average_of_replicas_is_their_mean():
    """average_params with default weights leaves every replica holding
    the elementwise mean of the replicas (rtol 1e-6)."""
    devices = [mx.cpu(i) for i in range(3)]
    device_params = [
        dp.get_params(dp.init_lenet_params(seed=s, scale=0.1), d)
        for s, d in enumerate(devices)
    ]
    want = [
        onp.mean([r[i].asnumpy() for r in device_params], axis=0)
        for i in range(8)
    ]
    averaging.average_params(device_params)
    for replica in device_params:
        for p, w in zip(replica, want):
            assert_allclose(p.asnumpy(), w, rtol=1e-6, atol=1e-7)


def test_bad_weights_are_refused():
    """Weights must be one per replica and sum to 1."""
    _, device_params = replicas(2)
    with pytest.raises(ValueError, match='need 2 weights summing to 1'):
        averaging.average_params(device_params, [0.5, 0.6])


@pytest.mark.parametrize('H, syncs', [(1, 6), (2, 3), (4, 2), (10, 1)])
def test_local_sgd_syncs_and_bytes(isolated_data, H, syncs):
    """train_local_sgd averages every H steps plus once at the end if
    needed, and counts one ring allreduce of the model per average."""
    write_fashion_dir(isolated_data / 'fm', n_train=24, n_test=8)
    data = dp.load_fashion_mnist(4, root=str(isolated_data / 'fm'), seed=0)
    devices = [mx.cpu(0), mx.cpu(1)]
    result = averaging.train_local_sgd(H, devices, data, num_epochs=1)
    n = sum(p.size for p in dp.init_lenet_params())
    per_sync = max(schedules.traffic(schedules.ring_schedule(2), 2, n)[0])
    assert (result.steps, result.syncs) == (6, syncs)
    assert result.bytes_sent == syncs * per_sync
    assert len(result.drift) == syncs


@pytest.mark.parametrize('k', [2, 3])
def test_local_step_is_train_batch_on_each_shard_alone(k):
    """A local SGD step leaves replica j exactly where train_batch on one
    device puts it, given only shard j: the same gradients
    (training.device_gradients) and update (training.sgd), bit for bit,
    with no communication between the devices."""
    X, y = make_batches(sizes=(11,))[0]
    devices, local = replicas(k)
    averaging.local_sgd_step(X, y, local, devices, LR)
    start = dp.init_lenet_params(seed=1, scale=0.1)
    X_shards, y_shards = dp.split_batch(X, y, devices)
    for d, Xs, ys, replica in zip(devices, X_shards, y_shards, local):
        alone = dp.get_params(start, d)
        dp.train_batch(Xs, ys, [alone], [d], LR)
        for p, q in zip(replica, alone):
            assert_array_equal(p.asnumpy(), q.asnumpy())
    # the replicas took different steps: no sum reached them
    assert any(
        (p.asnumpy() != q.asnumpy()).any() for p, q in zip(local[0], local[1])
    )
