"""d2lpar.grading.overlap: check_train_epoch passes the reference epoch
(each step's numbers read after the next step is queued) and names each
mistake a student's epoch loop makes."""

import pytest
from conftest import (
    assert_names_only,
    assert_passes,
    bug_ids,
    run_fresh,
    shard_grads,
)
from mxnet import npx

import d2lpar as dp
from d2lpar import _d2l as d2l  # d2l's sgd, written out (d2l is an extra)
from d2lpar.grading import reference


def _numbers(step):
    losses, corrects = step
    return sum(a.item() for a in losses), sum(a.item() for a in corrects)


def ep_synced(train_iter, device_params, devices, lr):
    # Reads each step's numbers at once, through .asnumpy(): in sync.
    loss = correct = n = 0
    for X, y in train_iter:
        losses, corrects = dp.train_batch(X, y, device_params, devices, lr)
        loss += sum(float(a.asnumpy()) for a in losses)
        correct += sum(float(a.asnumpy()) for a in corrects)
        n += X.shape[0]
    return loss / n, correct / n


def ep_waits(train_iter, device_params, devices, lr):
    # The old premise: npx.waitall() after every batch.
    steps, n = [], 0
    for X, y in train_iter:
        steps.append(dp.train_batch(X, y, device_params, devices, lr))
        npx.waitall()
        n += X.shape[0]
    loss, correct = map(sum, zip(*map(_numbers, steps)))
    return loss / n, correct / n


def ep_never_waits(train_iter, device_params, devices, lr):
    # Queues the whole epoch; reads nothing, waits for nothing.
    for X, y in train_iter:
        dp.train_batch(X, y, device_params, devices, lr)


def ep_reads_at_end(train_iter, device_params, devices, lr):
    # Right numbers, but every step stays in flight until the end.
    steps, n = [], 0
    for X, y in train_iter:
        steps.append(dp.train_batch(X, y, device_params, devices, lr))
        n += X.shape[0]
    loss, correct = map(sum, zip(*map(_numbers, steps)))
    return loss / n, correct / n


def ep_batch_means(train_iter, device_params, devices, lr):
    # Two steps in flight, but the mean of per-batch means.
    pending, means = None, []
    for X, y in train_iter:
        step = dp.train_batch(X, y, device_params, devices, lr)
        if pending is not None:
            means.append(_numbers(pending[0]) + (pending[1],))
        pending = (step, X.shape[0])
    means.append(_numbers(pending[0]) + (pending[1],))
    return (
        sum(loss / n for loss, _, n in means) / len(means),
        sum(c / n for _, c, n in means) / len(means),
    )


def _two_in_flight(batches, step):
    """The intended loop around ``step(X, y)``: read each step's numbers
    after the next is queued."""
    loss = correct = n = 0
    pending = None
    for X, y in batches:
        queued = step(X, y)
        if pending is not None:
            loss, correct = map(sum, zip((loss, correct), _numbers(pending)))
        pending = queued
        n += X.shape[0]
    loss, correct = map(sum, zip((loss, correct), _numbers(pending)))
    return loss / n, correct / n


def ep_skips_last(train_iter, device_params, devices, lr):
    return _two_in_flight(
        list(train_iter)[:-1],
        lambda X, y: dp.train_batch(X, y, device_params, devices, lr),
    )


def ep_local(train_iter, device_params, devices, lr):
    def step(X, y):  # each replica steps on its own shard's gradient
        shard_grads(X, y, device_params, devices)
        for p in device_params:
            d2l.sgd(p, lr, X.shape[0])
        return [], []  # no numbers to read

    return _two_in_flight(train_iter, step)


BUGS = [
    (dp.check_train_epoch, ep_synced, 'synced-every-batch'),
    (dp.check_train_epoch, ep_waits, 'synced-every-batch'),
    (dp.check_train_epoch, ep_never_waits, 'too-far-ahead'),
    (dp.check_train_epoch, ep_reads_at_end, 'too-far-ahead'),
    (dp.check_train_epoch, ep_batch_means, 'wrong-epoch-stats'),
    (dp.check_train_epoch, ep_skips_last, 'not-one-device-step'),
    (dp.check_train_epoch, ep_local, 'replicas-diverge'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy epoch fails, and every failing case names exactly the
    mistake it makes."""
    assert_names_only(check, bug, code)


def test_reference_passes():
    """The homework's reference train_epoch passes every case."""
    assert_passes(dp.check_train_epoch, reference.train_epoch)


def test_epoch_check_warns_nothing_in_a_fresh_process():
    """Its one-device reference runs after k-device cases, where cpu(0)
    keeps one thread: the student's notebook shows no warning about it
    (a stderr block under the check, which the teacher test caught)."""
    code = """
        import warnings
        import d2lpar as dp
        from d2lpar.grading import reference
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            ok = bool(dp.check_train_epoch(reference.train_epoch))
        print(ok, [str(w.message)[:60] for w in caught])
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': ''}, timeout=300)
    assert line == 'True []'
