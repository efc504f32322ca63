"""d2lpar.techniques.optim: stateful optimizers keep replicas identical and equal
the one-device step."""

import mxnet as mx
import numpy as onp
import pytest
from conftest import make_batches
from mxnet import autograd, np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.techniques import optim


def run(k, optimizer, batches, check_identical=True):
    """Train on k CPU contexts; return device 0's parameters."""
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    device_params = [dp.get_params(start, d) for d in devices]
    states = optim.init_states(optimizer, device_params)
    for X, y in batches:
        optim.train_batch(X, y, device_params, states, devices, optimizer)
        if check_identical:
            for replica in device_params[1:]:
                for p, q in zip(device_params[0], replica):
                    assert_array_equal(p.asnumpy(), q.asnumpy())
    return [p.asnumpy() for p in device_params[0]]


def reference(name, lr, batches, mu=0.9, b1=0.9, b2=0.999, eps=1e-8):
    """Whole-batch momentum SGD or Adam in float64 NumPy on one device,
    written from the papers' formulas, not from d2lpar.optim."""
    params = dp.init_lenet_params(seed=1, scale=0.1)
    w = [p.asnumpy().astype('float64') for p in params]
    m = [onp.zeros_like(a) for a in w]
    v = [onp.zeros_like(a) for a in w]
    for t, (X, y) in enumerate(batches, start=1):
        for p, a in zip(params, w):
            p[:] = np.array(a, dtype='float32')
            p.attach_grad()
        with autograd.record():
            l = dp.cross_entropy(dp.lenet(X, params), y).sum()
        l.backward()
        for j, p in enumerate(params):
            g = p.grad.asnumpy().astype('float64') / len(X)
            if name == 'momentum':
                v[j] = mu * v[j] + g
                w[j] -= lr * v[j]
            else:
                m[j] = b1 * m[j] + (1 - b1) * g
                v[j] = b2 * v[j] + (1 - b2) * g * g
                w[j] -= (
                    lr
                    * (m[j] / (1 - b1**t))
                    / (onp.sqrt(v[j] / (1 - b2**t)) + eps)
                )
    return w


@pytest.mark.parametrize(
    'name, make',
    [
        ('momentum', lambda: optim.Momentum(0.1)),
        ('adam', lambda: optim.Adam(0.01)),
    ],
)
def test_one_device_matches_the_formulas(name, make):
    """On one device, Momentum and Adam equal a float64 NumPy reference
    of their published formulas (rtol 1e-4, atol 1e-5)."""
    batches = make_batches()
    got = run(1, make(), batches)
    want = reference(name, make().lr, batches)
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('k', [2, 3])
@pytest.mark.parametrize(
    'make', [lambda: optim.Momentum(0.1), lambda: optim.Adam(0.01)]
)
def test_k_devices_equal_one_device(k, make):
    """k-device steps with optimizer state equal 1-device steps (rtol
    1e-4, atol 1e-5), uneven shards included."""
    batches = make_batches()
    for got, want in zip(run(k, make(), batches), run(1, make(), batches)):
        assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    'make', [lambda: optim.Momentum(0.1), lambda: optim.Adam(0.01)]
)
def test_replicas_stay_bit_identical_over_many_steps(make):
    """After 30 steps on 3 devices every replica's parameters and every
    replica's optimizer state are bit for bit the same."""
    devices = [mx.cpu(i) for i in range(3)]
    start = dp.init_lenet_params(seed=2, scale=0.1)
    device_params = [dp.get_params(start, d) for d in devices]
    optimizer = make()
    states = optim.init_states(optimizer, device_params)
    for X, y in make_batches(sizes=(9,) * 30, seed=3):
        optim.train_batch(X, y, device_params, states, devices, optimizer)
    for i in (1, 2):
        for p, q in zip(device_params[0], device_params[i]):
            assert_array_equal(p.asnumpy(), q.asnumpy())
        for s, r in zip(states[0], states[i]):
            assert s['t'] == r['t'] == 30
            for name in optimizer.state_names:
                assert_array_equal(s[name].asnumpy(), r[name].asnumpy())


def test_state_bytes_are_zero_one_two_copies_of_the_model():
    """SGD holds no state, momentum one model-sized array per device,
    Adam two, on every device."""
    devices = [mx.cpu(i) for i in range(2)]
    start = dp.init_lenet_params()
    device_params = [dp.get_params(start, d) for d in devices]
    model = sum(p.size * 4 for p in start)
    for optimizer, copies in (
        (optim.SGD(0.1), 0),
        (optim.Momentum(0.1), 1),
        (optim.Adam(0.1), 2),
    ):
        states = optim.init_states(optimizer, device_params)
        assert optim.state_bytes(states) == [copies * model] * 2


def test_states_live_on_their_parameters_device():
    """Each replica's state is allocated on that replica's device."""
    devices = [mx.cpu(i) for i in range(2)]
    device_params = [dp.get_params(dp.init_lenet_params(), d) for d in devices]
    states = optim.init_states(optim.Adam(0.1), device_params)
    for device, per_device in zip(devices, states):
        assert {s['m'].ctx for s in per_device} == {device}


def test_bad_arguments_are_refused():
    """Out-of-range hyperparameters and mismatched states fail early."""
    with pytest.raises(ValueError, match='momentum must be in'):
        optim.Momentum(0.1, momentum=1.0)
    with pytest.raises(ValueError, match='beta2 must be in'):
        optim.Adam(0.1, beta2=1.5)
    with pytest.raises(ValueError, match='lr must be positive'):
        optim.Adam(0)
    devices = [mx.cpu(0), mx.cpu(1)]
    device_params = [dp.get_params(dp.init_lenet_params(), d) for d in devices]
    X, y = make_batches(sizes=(4,))[0]
    with pytest.raises(ValueError, match='1 states and 2 devices'):
        optim.train_batch(X, y, device_params, [[]], devices, optim.SGD(0.1))


@pytest.mark.parametrize('k', [1, 3])
def test_plain_sgd_step_is_train_batch(k):
    """optim.train_batch with plain SGD is train_batch's step: the same
    gradients and sum (training.device_gradients, sum_gradients); only
    the update multiplies lr by g / n instead of dividing lr * g by n,
    one rounding apart (rtol 1e-6, atol 1e-7), on shards of 12, 11, 7
    and 12 examples. Losing a device's gradient or dividing by a shard
    size would move the parameters by far more."""
    batches = make_batches()
    got = run(k, optim.SGD(0.5), batches)
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    want = [dp.get_params(start, d) for d in devices]
    for X, y in batches:
        dp.train_batch(X, y, want, devices, 0.5)
    moved = max(onp.abs(g - s.asnumpy()).max() for g, s in zip(got, start))
    assert moved > 1e-3
    for g, w in zip(got, want[0]):
        assert_allclose(g, w.asnumpy(), rtol=1e-6, atol=1e-7)
