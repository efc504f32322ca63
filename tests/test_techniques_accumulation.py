"""d2lpar.techniques.accumulation: accumulating over separate minibatches is the
step on their union; it reduces once instead of once per minibatch."""

import mxnet as mx
import pytest
from conftest import LR, make_batches
from mxnet import np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.techniques import accumulation


def run(k, groups, step):
    """Take one step per group of minibatches on k CPU contexts; check
    the replicas stay identical; return device 0's parameters."""
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    device_params = [dp.get_params(start, d) for d in devices]
    for group in groups:
        step(group, device_params, devices)
    for replica in device_params[1:]:
        for p, q in zip(device_params[0], replica):
            assert_array_equal(p.asnumpy(), q.asnumpy())
    return [p.asnumpy() for p in device_params[0]]


def union_step(group, device_params, devices):
    X = np.concatenate([X for X, _ in group])
    y = np.concatenate([y for _, y in group])
    dp.train_batch(X, y, device_params, devices, LR)


@pytest.mark.parametrize('k', [1, 2, 3])
@pytest.mark.parametrize('reduce_every', [False, True])
def test_accumulation_train_batch_equals_the_step_on_the_union(
    k, reduce_every
):
    """Two steps, over minibatches of 12+11 and 7+12+9 examples (uneven
    on 2 and 3 devices), give train_batch's parameters on the
    concatenated batches (rtol 1e-5, atol 1e-6), reducing once or after
    every minibatch."""
    batches = make_batches(sizes=(12, 11, 7, 12, 9))
    groups = [batches[:2], batches[2:]]

    def ours(group, device_params, devices):
        dp.accumulation.train_batch(
            group, device_params, devices, LR, reduce_every=reduce_every
        )

    for g, w in zip(run(k, groups, ours), run(k, groups, union_step)):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('reduce_every, calls', [(False, 8), (True, 24)])
def test_accumulation_reduces_once_per_step(reduce_every, calls):
    """Three minibatches on 2 devices: 8 allreduce calls (one per LeNet
    array) carrying the model's bytes once, or 24 carrying them three
    times when every minibatch is reduced."""
    counter = dp.CountingAllreduce()
    devices = [mx.cpu(0), mx.cpu(1)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    device_params = [dp.get_params(start, d) for d in devices]
    n = dp.accumulation.train_batch(
        make_batches(sizes=(4, 4, 4)),
        device_params,
        devices,
        LR,
        algorithm=counter,
        reduce_every=reduce_every,
    )
    model_bytes = sum(4 * p.size for p in start)
    assert n == 12
    assert counter.calls == calls
    assert counter.nbytes == model_bytes * calls // 8


def test_accumulation_train_batch_refuses_no_batches():
    """An empty list of minibatches is refused with what to pass."""
    devices = [mx.cpu(0)]
    params = [dp.get_params(dp.init_lenet_params(), devices[0])]
    with pytest.raises(ValueError, match='batches is empty'):
        dp.accumulation.train_batch([], params, devices, LR)


def test_lenet_activations_are_lenets_operators():
    """The last activation is lenet's logits (exactly: the same
    operators), and the shapes are those lenet's comments give."""
    X = make_batches(sizes=(5,))[0][0]
    params = dp.init_lenet_params(seed=2, scale=0.1)
    acts = accumulation.lenet_activations(X, params)
    assert_array_equal(acts[-1][1].asnumpy(), dp.lenet(X, params).asnumpy())
    shapes = dict((name, a.shape) for name, a in acts)
    assert shapes['conv1'] == (5, 20, 26, 26)
    assert shapes['pool1'] == (5, 20, 13, 13)
    assert shapes['conv2'] == (5, 50, 9, 9)
    assert shapes['pool2'] == (5, 50, 4, 4)
    assert shapes['dense3'] == (5, 128)


@pytest.mark.parametrize('k, m', [(1, 3), (2, 2), (3, 2)])
def test_accumulation_train_batch_is_train_batch_accumulate(k, m):
    """Given train_batch's own micro-batches, accumulation.train_batch
    takes train_batch(accumulate=m)'s step bit for bit: both run the one
    accumulation loop (training.accumulate_gradients), one sum, one
    update. Batches of 12, 11 and 7 examples split unevenly."""
    batches = make_batches(sizes=(12, 11, 7))

    def micro(group, device_params, devices):
        X, y = group
        accumulation.train_batch(
            dp.training.micro_batches(X, y, m), device_params, devices, LR
        )

    def whole(group, device_params, devices):
        dp.train_batch(*group, device_params, devices, LR, accumulate=m)

    for g, w in zip(run(k, batches, micro), run(k, batches, whole)):
        assert_array_equal(g, w)
