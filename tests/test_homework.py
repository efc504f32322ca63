"""The homework checks: references pass, stubs fail clearly, and every
mistake code is named for the bug it stands for.

Each buggy implementation below makes one mistake a student makes; its
test fails if the check stops naming that mistake (and only it).
"""

import pytest
from conftest import run_fresh
from mxnet import autograd, np, npx

import d2lpar as dp
from d2lpar import _d2l as d2l  # d2l's sgd, written out (d2l is an extra)
from d2lpar.homework import (
    MISTAKES,
    check_sharded_allreduce,
    check_tree_allreduce,
    reference,
)
from d2lpar.homework.schedule import Transfer
from d2lpar.homework.training import micro_batches
from d2lpar.schedules import naive_schedule, ring_schedule
from d2lpar.splitting import shard_sizes

# ---------------------------------------------------------------- allreduce


def ar_rebinds(data):
    total = sum(a.copyto(data[0].ctx) for a in data)
    for i in range(len(data)):
        data[i] = total.copyto(data[i].ctx)


def ar_reduce_only(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)


def ar_gather(data):
    # Correct sum, gathered on device 0: the library's naive allreduce.
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def ar_mean(data):
    ar_gather(data)
    for a in data:
        a[:] = a / len(data)


def ar_wraps_tree(data):
    # The right sum, and no tree: the library does the work.
    dp.allreduce(data)


def ar_tree(data):
    # Homework 1's tree: pairs up, ceil(log2 k) rounds, then back down.
    k, step = len(data), 1
    while step < k:
        for i in range(0, k - step, 2 * step):
            data[i][:] += data[i + step].copyto(data[i].ctx)
        step *= 2
    while step > 1:
        step //= 2
        for i in range(0, k - step, 2 * step):
            data[i].copyto(data[i + step])


def ar_neighbour(data):
    # Each device adds its neighbour's array: right for 2 devices only.
    k = len(data)
    new = [data[i] + data[(i + 1) % k].copyto(data[i].ctx) for i in range(k)]
    for a, b in zip(data, new):
        a[:] = b


def ar_one_device(data):
    total = sum(a.copyto(data[0].ctx) for a in data)
    for i in range(1, len(data)):
        data[i] = total


def ar_float32(data):
    total = np.zeros(data[0].shape, ctx=data[0].ctx)  # float32
    for a in data:
        total += a.astype('float32').copyto(data[0].ctx)
    for a in data:
        a[:] = total.astype(a.dtype).copyto(a.ctx)


def stub_raises(*args, **kwargs):
    raise NotImplementedError


def stub_none(*args, **kwargs):
    return None


# ------------------------------------------------------------ ring schedule


def ring_tuples(k):
    return [[(i, (i + 1) % k) for i in range(k)]] if k > 1 else [[(0, 0)]]


def ring_chain_whole(k):
    # Pass the whole array along the chain, then back around: k-1 + k-1
    # steps, but every middle device moves 2 N bytes.
    up = [[Transfer(i, i + 1, None, True)] for i in range(k - 1)]
    down = [
        [Transfer((k - 1 + i) % k, i % k, None, False)] for i in range(k - 1)
    ]
    return up + [[t for t in step] for step in down]


def ring_one_per_step(k):
    return [[t] for step in ring_schedule(k) for t in step]


def ring_gather_off_by_one(k):
    # The all-gather sends the chunk it has just received, one too early.
    reduce_scatter = ring_schedule(k)[: k - 1]
    all_gather = [
        [Transfer(i, (i + 1) % k, (i - s) % k, False) for i in range(k)]
        for s in range(k - 1)
    ]
    return reduce_scatter + all_gather


# -------------------------------------------------------------- split_batch
# Each bug refuses too small a batch, as the library does, so that it
# makes only its own mistake.


def _check_sizes(X, devices):
    if X.shape[0] < len(devices):
        raise ValueError('too few examples')


def _slices(X, y, devices, sizes, y_sizes=None):
    _check_sizes(X, devices)
    out_X, out_y, start, y_start = [], [], 0, 0
    for d, size, ys in zip(devices, sizes, y_sizes or sizes):
        out_X.append(X[start : start + size].as_in_ctx(d))
        out_y.append(y[y_start : y_start + ys].as_in_ctx(d))
        start, y_start = start + size, y_start + ys
    return out_X, out_y


def sb_drops(X, y, devices):
    k = len(devices)
    return _slices(X, y, devices, [X.shape[0] // k] * k)


def sb_overlaps(X, y, devices):
    _check_sizes(X, devices)
    n, k = X.shape[0], len(devices)
    base, extra = n // k, n % k
    return (
        [
            X[i * base : (i + 1) * base + extra].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
        [
            y[i * base : (i + 1) * base + extra].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
    )


def sb_strided(X, y, devices):
    _check_sizes(X, devices)
    k = len(devices)
    return (
        [X[i::k].as_in_ctx(d) for i, d in enumerate(devices)],
        [y[i::k].as_in_ctx(d) for i, d in enumerate(devices)],
    )


def sb_labels_shifted(X, y, devices):
    sizes = shard_sizes(X.shape[0], len(devices))
    return _slices(X, y, devices, sizes, sizes[::-1])


def sb_one_device(X, y, devices):
    X_shards, y_shards = dp.split_batch(X, y, devices)
    return (
        [x.as_in_ctx(devices[0]) for x in X_shards],
        [t.as_in_ctx(devices[0]) for t in y_shards],
    )


def sb_remainder_last(X, y, devices):
    n, k = X.shape[0], len(devices)
    return _slices(X, y, devices, [n // k] * (k - 1) + [n - n // k * (k - 1)])


def sb_no_check(X, y, devices):
    sizes = shard_sizes(X.shape[0], len(devices))  # no size check
    return (
        [
            X[sum(sizes[:i]) : sum(sizes[: i + 1])].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
        [
            y[sum(sizes[:i]) : sum(sizes[: i + 1])].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
    )


def sb_float32(X, y, devices):
    X_shards, y_shards = dp.split_batch(X, y, devices)
    return [x.astype('float32') for x in X_shards], y_shards


def sb_only_X(X, y, devices):
    return dp.split_batch(X, y, devices)[0]


# --------------------------------------------------------------- evaluation


def _shard_counts(device_params, data_iter, devices):
    for X, y in data_iter:
        X_shards, y_shards = dp.split_batch(X, y, devices)
        yield [
            (
                int(
                    (
                        dp.lenet(Xs, p).argmax(axis=1).astype('int32') == ys
                    ).sum()
                ),
                ys.shape[0],
            )
            for Xs, ys, p in zip(X_shards, y_shards, device_params)
        ]


def ev_batch_mean(device_params, data_iter, devices):
    accs = [
        sum(c for c, _ in b) / sum(n for _, n in b)
        for b in _shard_counts(device_params, data_iter, devices)
    ]
    return sum(accs) / len(accs)


def ev_shard_mean(device_params, data_iter, devices):
    accs = [
        c / n
        for b in _shard_counts(device_params, data_iter, devices)
        for c, n in b
    ]
    return sum(accs) / len(accs)


def ev_first_shard(device_params, data_iter, devices):
    b = [s[0] for s in _shard_counts(device_params, data_iter, devices)]
    return sum(c for c, _ in b) / sum(n for _, n in b)


def ev_off_by_one(device_params, data_iter, devices):
    b = [
        s for x in _shard_counts(device_params, data_iter, devices) for s in x
    ]
    return sum(c for c, _ in b) / (sum(n for _, n in b) + 1)


# ------------------------------------------------------------- train_batch


def _grads(X, y, device_params, devices):
    X_shards, y_shards = dp.split_batch(X, y, devices)
    with autograd.record():
        ls = [
            dp.cross_entropy(dp.lenet(Xs, p), ys).sum()
            for Xs, ys, p in zip(X_shards, y_shards, device_params)
        ]
    for l in ls:
        l.backward()
    return X_shards


def tb_shard_scale(X, y, device_params, devices, lr):
    X_shards = _grads(X, y, device_params, devices)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j].grad for p in device_params])
    for p, Xs in zip(device_params, X_shards):
        d2l.sgd(p, lr, Xs.shape[0])


def tb_no_allreduce(X, y, device_params, devices, lr):
    _grads(X, y, device_params, devices)
    for p in device_params:
        d2l.sgd(p, lr, X.shape[0])


def tb_first_grad(X, y, device_params, devices, lr):
    _grads(X, y, device_params, devices)
    for p in device_params[1:]:
        for q, q0 in zip(p, device_params[0]):
            q0.grad.copyto(q.grad)
    for p in device_params:
        d2l.sgd(p, lr, X.shape[0])


def tb_rebinds(X, y, device_params, devices, lr):
    _grads(X, y, device_params, devices)
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
    _grads(X, y, device_params, devices)
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
        _grads(Xm, ym, device_params, devices)  # overwrites .grad
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
        _grads(Xm, ym, device_params, devices)
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
        _grads(Xm, ym, device_params, devices)
        for p, s in zip(device_params, sums):
            for q, t in zip(p, s):
                t += q.grad
    for p, s in zip(device_params, sums):
        for q, t in zip(p, s):
            q[:] = q - lr * t / X.shape[0]


# ------------------------------------------------------- parameter averaging


def avg_sums(device_params):
    for j in range(len(device_params[0])):
        dp.allreduce([p[j] for p in device_params])


def avg_rebinds(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        for p in device_params:
            p[j] = (total / k).copyto(p[j].ctx)


def avg_first_only(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        device_params[0][j][:] = total / k


def avg_one_device(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        for p in device_params[1:]:
            p[j] = total / k
        device_params[0][j][:] = total / k


def avg_by_k_plus_one(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j] for p in device_params])
        for p in device_params:
            p[j][:] = p[j] / (k + 1)


# -------------------------------------------------------------- the epoch


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
    def step(X, y):  # no numbers to read: its own step returns none
        tb_no_allreduce(X, y, device_params, devices, lr)
        return [], []

    return _two_in_flight(train_iter, step)


BUGS = [
    (dp.check_allreduce, ar_rebinds, 'not-in-place'),
    (dp.check_allreduce, ar_reduce_only, 'not-broadcast'),
    (dp.check_allreduce, ar_mean, 'averaged'),
    (dp.check_allreduce, ar_neighbour, 'wrong-sum'),
    (dp.check_allreduce, ar_one_device, 'changed-device'),
    (dp.check_allreduce, ar_float32, 'changed-dtype'),
    (dp.check_allreduce, stub_none, 'did-nothing'),
    (dp.check_allreduce, ar_wraps_tree, 'calls-library'),
    (check_tree_allreduce, ar_gather, 'not-a-tree'),
    (check_sharded_allreduce, ar_gather, 'not-sharded'),
    (dp.check_ring_schedule, ring_tuples, 'not-a-schedule'),
    (dp.check_ring_schedule, naive_schedule, 'not-a-ring'),
    (dp.check_ring_schedule, ring_chain_whole, 'too-much-traffic'),
    (dp.check_ring_schedule, ring_one_per_step, 'too-many-steps'),
    (dp.check_ring_schedule, ring_gather_off_by_one, 'wrong-sum'),
    (dp.check_ring_schedule, stub_none, 'bad-return'),
    (dp.check_split_batch, sb_drops, 'dropped-examples'),
    (dp.check_split_batch, sb_overlaps, 'duplicated-examples'),
    (dp.check_split_batch, sb_strided, 'reordered'),
    (dp.check_split_batch, sb_labels_shifted, 'labels-mismatched'),
    (dp.check_split_batch, sb_one_device, 'wrong-device'),
    (dp.check_split_batch, sb_remainder_last, 'unbalanced'),
    (dp.check_split_batch, sb_no_check, 'accepted-bad-input'),
    (dp.check_split_batch, sb_float32, 'changed-dtype'),
    (dp.check_split_batch, sb_only_X, 'bad-return'),
    (dp.check_evaluate, ev_batch_mean, 'averaged-batches'),
    (dp.check_evaluate, ev_shard_mean, 'averaged-shards'),
    (dp.check_evaluate, ev_first_shard, 'first-shard-only'),
    (dp.check_evaluate, ev_off_by_one, 'wrong-accuracy'),
    (dp.check_evaluate, stub_none, 'bad-return'),
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
    (dp.check_average_params, avg_sums, 'summed'),
    (dp.check_average_params, avg_rebinds, 'not-in-place'),
    (dp.check_average_params, avg_first_only, 'not-broadcast'),
    (dp.check_average_params, avg_one_device, 'changed-device'),
    (dp.check_average_params, avg_by_k_plus_one, 'wrong-mean'),
    (dp.check_train_epoch, ep_synced, 'synced-every-batch'),
    (dp.check_train_epoch, ep_waits, 'synced-every-batch'),
    (dp.check_train_epoch, ep_never_waits, 'too-far-ahead'),
    (dp.check_train_epoch, ep_reads_at_end, 'too-far-ahead'),
    (dp.check_train_epoch, ep_batch_means, 'wrong-epoch-stats'),
    (dp.check_train_epoch, ep_skips_last, 'not-one-device-step'),
    (dp.check_train_epoch, ep_local, 'replicas-diverge'),
]

CHECKS = [
    dp.check_allreduce,
    dp.check_ring_schedule,
    dp.check_split_batch,
    dp.check_evaluate,
    dp.check_train_batch,
    dp.check_grad_accumulation,
    dp.check_average_params,
    dp.check_train_epoch,
]


@pytest.mark.parametrize(
    'check, bug, code',
    BUGS,
    ids=[f'{c.__name__}-{code}' for c, _, code in BUGS],
)
def test_bug_is_named(check, bug, code):
    """The buggy implementation fails, and every failing case names
    exactly the mistake it makes."""
    _BUFFERS.clear()
    report = check(bug)
    assert not report
    assert report.mistakes == [code], str(report)


REFERENCES = [
    (dp.check_allreduce, dp.allreduce),
    (dp.check_allreduce, dp.sharded_allreduce),
    (dp.check_allreduce, dp.ring_allreduce),
    (check_tree_allreduce, ar_tree),
    (check_sharded_allreduce, dp.sharded_allreduce),
    (dp.check_ring_schedule, ring_schedule),
    (dp.check_split_batch, dp.split_batch),
    (dp.check_evaluate, dp.evaluate_accuracy_sharded),
    (dp.check_train_batch, dp.train_batch),
    (dp.check_grad_accumulation, reference.train_batch_accumulate),
    (dp.check_average_params, reference.average_params),
    (dp.check_train_epoch, reference.train_epoch),
]


@pytest.mark.parametrize(
    'check, fn',
    REFERENCES,
    ids=[f'{c.__name__}-{f.__name__}' for c, f in REFERENCES],
)
def test_reference_passes(check, fn):
    """The library's (or the homework's) reference passes every case."""
    report = check(fn)
    assert report.passed and bool(report), str(report)
    assert report.failures == []


def test_epoch_check_warns_nothing_in_a_fresh_process():
    """Its one-device reference runs after k-device cases, where cpu(0)
    keeps one thread: the student's notebook shows no warning about it
    (a stderr block under the check, which the teacher test caught)."""
    code = """
        import warnings
        import d2lpar as dp
        from d2lpar.homework import reference
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            ok = bool(dp.check_train_epoch(reference.train_epoch))
        print(ok, [str(w.message)[:60] for w in caught])
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': ''}, timeout=300)
    assert line == 'True []'


@pytest.mark.parametrize('check', CHECKS, ids=[c.__name__ for c in CHECKS])
def test_stub_fails_showing_its_traceback(check):
    """A stub raising NotImplementedError fails every case as `raised`,
    and the report shows the student's own line."""
    report = check(stub_raises)
    assert report.mistakes == ['raised']
    assert len(report.failures) == report.cases
    text = str(report)
    assert 'NotImplementedError' in text
    assert 'in stub_raises' in text
    assert 'raise NotImplementedError' in text


@pytest.mark.parametrize('check', CHECKS, ids=[c.__name__ for c in CHECKS])
def test_stub_returning_none_fails_clearly(check):
    """A stub that does nothing fails as `did-nothing` or `bad-return`
    (never a vague code), with a message naming what was expected."""
    report = check(stub_none)
    assert not report
    assert set(report.mistakes) <= {'did-nothing', 'bad-return'}
    assert 'expected' in report.failures[0].message


def test_every_code_has_a_buggy_implementation():
    """The table of mistakes and the bugs above cover each other: a code
    nobody can trigger is dead, a bug without a code is undocumented."""
    tested = {code for _, _, code in BUGS} | {'raised'}
    assert tested == set(MISTAKES)


def test_report_shows_first_failure_everywhere():
    """str, markdown and HTML all show the first failing case, the
    mistake, expected vs got and the hint."""
    report = dp.check_allreduce(ar_mean)
    first = report.failures[0]
    assert first.mistake == 'averaged'
    for text in (str(report), report._repr_markdown_(), report._repr_html_()):
        assert first.case in text
        assert 'averaged' in text
        assert 'expected every array' in text
        assert 'divided by the number of devices' in text


def test_failure_items_carry_case_message_and_hint():
    """Each failure names its case in words and its message says
    expected vs got."""
    report = dp.check_split_batch(sb_drops)
    for f in report.failures:
        assert f.mistake == 'dropped-examples'
        assert f.case.startswith('k=')
        assert 'expected' in f.message
        assert f.to_dict()['hint'] == MISTAKES['dropped-examples']
