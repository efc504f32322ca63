"""d2lpar.grading.training: check_train_batch and check_grad_accumulation
pass the references and name each mistake a student's step makes."""

import pytest
from conftest import (
    assert_names_only,
    assert_passes,
    bug_ids,
    make_batches,
    shard_grads,
    stub_none,
)
from mxnet import np

import d2lpar as dp
from d2lpar import _d2l as d2l  # d2l's sgd, written out (d2l is an extra)
from d2lpar.grading import reference
from d2lpar.grading.training import micro_batches

# ------------------------------------------------------------- train_batch


def tb_shard_scale(X, y, device_params, devices, lr):
    X_shards = shard_grads(X, y, device_params, devices)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j].grad for p in device_params])
    for p, Xs in zip(device_params, X_shards):
        d2l.sgd(p, lr, Xs.shape[0])


def tb_no_allreduce(X, y, device_params, devices, lr):
    shard_grads(X, y, device_params, devices)
    for p in device_params:
        d2l.sgd(p, lr, X.shape[0])


def tb_first_grad(X, y, device_params, devices, lr):
    shard_grads(X, y, device_params, devices)
    for p in device_params[1:]:
        for q, q0 in zip(p, device_params[0]):
            q0.grad.copyto(q.grad)
    for p in device_params:
        d2l.sgd(p, lr, X.shape[0])


def tb_rebinds(X, y, device_params, devices, lr):
    shard_grads(X, y, device_params, devices)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j].grad for p in device_params])
    for p in device_params:
        for j in range(len(p)):
            p[j] = p[j] - lr * p[j].grad / X.shape[0]


def tb_shares_arrays(X, y, device_params, devices, lr):
    dp.train_batch(X, y, device_params, devices, lr)
    for p in device_params[1:]:
        p[:] = device_params[0]


# Buffers per replica list; the list is kept alive so its id is not
# reused by the next case.
_BUFFERS = {}


def tb_stale(X, y, device_params, devices, lr):
    shard_grads(X, y, device_params, devices)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j].grad for p in device_params])
    _, buffers = _BUFFERS.setdefault(
        id(device_params),
        (
            device_params,
            [[np.zeros_like(q) for q in p] for p in device_params],
        ),
    )
    for p, bufs in zip(device_params, buffers):
        for q, b in zip(p, bufs):
            b += q.grad  # never reset between steps
            q[:] = q - lr * b / X.shape[0]


# ------------------------------------------------------------ accumulation


def acc_last_only(X, y, device_params, devices, lr, accumulate=1):
    for Xm, ym in micro_batches(X, y, accumulate):
        shard_grads(Xm, ym, device_params, devices)  # overwrites .grad
    for j in range(len(device_params[0])):
        dp.allreduce([p[j].grad for p in device_params])
    for p in device_params:
        d2l.sgd(p, lr, X.shape[0])


def acc_steps(X, y, device_params, devices, lr, accumulate=1):
    for Xm, ym in micro_batches(X, y, accumulate):
        dp.train_batch(Xm, ym, device_params, devices, lr)


def acc_never_zeroed(X, y, device_params, devices, lr, accumulate=1):
    if id(device_params) not in _BUFFERS:
        _BUFFERS[id(device_params)] = device_params
        for p in device_params:
            for q in p:
                q.attach_grad(grad_req='add')  # once, never zeroed
    for Xm, ym in micro_batches(X, y, accumulate):
        shard_grads(Xm, ym, device_params, devices)
    for j in range(len(device_params[0])):
        sums = [p[j].grad.copy() for p in device_params]
        dp.allreduce(sums)
        for p, s in zip(device_params, sums):
            p[j][:] = p[j] - lr * s / X.shape[0]


def acc_micro_scale(X, y, device_params, devices, lr, accumulate=1):
    micro = micro_batches(X, y, accumulate)
    reference.train_batch_accumulate(
        X,
        y,
        device_params,
        devices,
        lr * X.shape[0] / micro[0][0].shape[0],
        accumulate,
    )


def acc_no_allreduce(X, y, device_params, devices, lr, accumulate=1):
    sums = [[np.zeros_like(q) for q in p] for p in device_params]
    for Xm, ym in micro_batches(X, y, accumulate):
        shard_grads(Xm, ym, device_params, devices)
        for p, s in zip(device_params, sums):
            for q, t in zip(p, s):
                t += q.grad
    for p, s in zip(device_params, sums):
        for q, t in zip(p, s):
            q[:] = q - lr * t / X.shape[0]


BUGS = [
    (dp.check_train_batch, tb_shard_scale, 'wrong-scale'),
    (dp.check_train_batch, tb_no_allreduce, 'replicas-diverge'),
    (dp.check_train_batch, tb_first_grad, 'not-one-device-step'),
    (dp.check_train_batch, tb_rebinds, 'not-in-place'),
    (dp.check_train_batch, tb_shares_arrays, 'changed-device'),
    (dp.check_train_batch, tb_stale, 'stale-gradients'),
    (dp.check_train_batch, stub_none, 'did-nothing'),
    (dp.check_grad_accumulation, acc_last_only, 'not-accumulated'),
    (dp.check_grad_accumulation, acc_steps, 'stepped-per-micro-batch'),
    (dp.check_grad_accumulation, acc_never_zeroed, 'stale-gradients'),
    (dp.check_grad_accumulation, acc_micro_scale, 'wrong-scale'),
    (dp.check_grad_accumulation, acc_no_allreduce, 'replicas-diverge'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy step fails, and every failing case names exactly the
    mistake it makes."""
    _BUFFERS.clear()
    assert_names_only(check, bug, code)


REFERENCES = [
    (dp.check_train_batch, dp.train_batch),
    (dp.check_grad_accumulation, reference.train_batch_accumulate),
]


@pytest.mark.parametrize(
    'check, fn',
    REFERENCES,
    ids=[f'{c.__name__}-{f.__name__}' for c, f in REFERENCES],
)
def test_reference_passes(check, fn):
    """The library's train_batch and the homework's accumulating step
    pass every case."""
    assert_passes(check, fn)


@pytest.mark.parametrize('k, m', [(1, 2), (2, 3), (3, 2)])
def test_reference_accumulation_is_train_batch_accumulate(k, m):
    """The homework's reference accumulates with the library's loop
    (training.accumulate_gradients), so it takes
    dp.train_batch(accumulate=m)'s step bit for bit, on 13 examples
    that split unevenly."""
    X, y = make_batches(sizes=(13,))[0]
    devices = dp.devices(k)
    start = dp.init_lenet_params(seed=2, scale=0.1)
    ours = [dp.get_params(start, d) for d in devices]
    want = [dp.get_params(start, d) for d in devices]
    reference.train_batch_accumulate(X, y, ours, devices, 0.5, accumulate=m)
    dp.train_batch(X, y, want, devices, 0.5, accumulate=m)
    for replica, wanted in zip(ours, want):
        for p, q in zip(replica, wanted):
            assert (p.asnumpy() == q.asnumpy()).all()
    assert (ours[0][0].asnumpy() != start[0].asnumpy()).any()
