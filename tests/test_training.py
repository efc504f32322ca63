"""d2lpar.training: k-device steps equal 1-device steps; train() works."""
import re

import mxnet as mx
import numpy as onp
import pytest
from mxnet import autograd, np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from conftest import needs_real_data

LR = 0.5
BATCH_SIZES = (12, 11, 7)  # 11 and 7 do not divide by 2 or 3


def make_batches(seed=0):
    rng = onp.random.default_rng(seed)
    return [(np.array(rng.uniform(size=(n, 1, 28, 28)), dtype='float32'),
             np.array(rng.integers(0, 10, n), dtype='int32'))
            for n in BATCH_SIZES]


def run_steps(k, batches, **options):
    """Train on k CPU contexts; check replicas agree after every step."""
    devices = [mx.cpu(i) for i in range(k)]
    params = dp.init_lenet_params(seed=1, scale=0.1)
    device_params = [dp.get_params(params, d) for d in devices]
    for X, y in batches:
        dp.train_batch(X, y, device_params, devices, LR, **options)
        for replica in device_params[1:]:
            for p, q in zip(device_params[0], replica):
                assert_array_equal(p.asnumpy(), q.asnumpy())
    return [p.asnumpy() for p in device_params[0]]


def reference_steps(batches):
    """Plain whole-batch SGD on one device, written without d2lpar's
    train_batch: the reference the data-parallel step must equal."""
    params = dp.init_lenet_params(seed=1, scale=0.1)
    for p in params:
        p.attach_grad()
    for X, y in batches:
        with autograd.record():
            l = dp.cross_entropy(dp.lenet(X, params), y).sum()
        l.backward()
        for p in params:
            p[:] = p - LR * p.grad / X.shape[0]
    return [p.asnumpy() for p in params]


def test_one_device_matches_reference():
    """train_batch on 1 device is plain minibatch SGD (rtol 1e-5), and it
    really moves the parameters."""
    batches = make_batches()
    got, want = run_steps(1, batches), reference_steps(batches)
    start = dp.init_lenet_params(seed=1, scale=0.1)
    assert any(onp.abs(g - s.asnumpy()).max() > 1e-4
               for g, s in zip(got, start))
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('k', [2, 3])
def test_k_devices_equal_one_device(k):
    """k-device training equals 1-device training after several steps,
    including batches not divisible by k (rtol 1e-5, atol 1e-6); all
    replicas are identical after every step (checked in run_steps)."""
    batches = make_batches()
    for got, want in zip(run_steps(k, batches), run_steps(1, batches)):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('options', [
    dict(algorithm=dp.ring_allreduce),
    dict(bucket=True),
    dict(algorithm=dp.sharded_allreduce, bucket=True),
    dict(algorithm=dp.kvstore_allreduce, bucket=True),
])
def test_other_allreduces_equal_the_naive_one(options):
    """train_batch with the ring, sharded or kvstore allreduce, per
    parameter or bucketed, gives the parameters of the naive allreduce on
    3 devices (rtol 1e-5); replicas stay identical."""
    batches = make_batches()
    for got, want in zip(run_steps(3, batches, **options),
                         run_steps(3, batches)):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_train_batch_bad_input():
    """Non-positive lr and replicas that don't match devices are refused."""
    devices = [mx.cpu(0), mx.cpu(1)]
    params = dp.init_lenet_params()
    device_params = [dp.get_params(params, d) for d in devices]
    X, y = make_batches()[0]
    with pytest.raises(ValueError, match='lr must be positive'):
        dp.train_batch(X, y, device_params, devices, 0)
    with pytest.raises(ValueError, match='2 parameter replicas for 3'):
        dp.train_batch(X, y, device_params, devices + [mx.cpu(2)], LR)
    with pytest.raises(ValueError, match='replica 0 lives on cpu\\(1\\)'):
        dp.train_batch(X, y, device_params[::-1], devices, LR)


@pytest.mark.parametrize('kwargs, message', [
    (dict(lr=0), 'lr must be positive'),
    (dict(batch_size=0), 'batch_size must be positive'),
    (dict(num_epochs=0), 'num_epochs must be positive'),
    (dict(num_gpus=0), 'num_gpus must be positive'),
    (dict(devices=[]), 'device list is empty'),
])
def test_train_bad_input(kwargs, message):
    """train() refuses bad arguments before loading any data."""
    data = ([], [])
    with pytest.raises(ValueError, match=message):
        dp.train(data=data, plot=False, **kwargs)


@needs_real_data
def test_train_end_to_end_beats_chance(capsys):
    """Two epochs on 4,000 real Fashion-MNIST images (fixed shuffle) on 2
    CPU contexts reach far above the 10% of chance, report per-epoch
    numbers, print the chapter's summary line, and draw one curve point
    per epoch."""
    data = dp.load_fashion_mnist(64, num_train=4000, num_test=500, seed=0)
    devices = [mx.cpu(0), mx.cpu(1)]
    result = dp.train(lr=0.1, num_epochs=2, devices=devices, data=data,
                      init_scale=0.1, plot=True)
    assert result.final_test_acc > 0.5
    assert len(result.test_acc) == len(result.epoch_seconds) == 2
    assert all(s > 0 for s in result.epoch_seconds)
    assert result.devices == devices
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r'test acc: 0\.\d\d, \d+\.\d sec/epoch on '
                        r'\[cpu\(0\), cpu\(1\)\]', line)
    xs, ys = result.figure.axes[0].lines[0].get_data()
    assert list(xs) == [1, 2]
    assert_allclose(ys, result.test_acc)
