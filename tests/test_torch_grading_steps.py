"""d2lpar.torch's checks of train_batch, gradient accumulation (homework
4) and the epoch with two steps in flight (homework 6): a correct
PyTorch solution passes, and each mistake the MXNet checks name is
named, with the same code, when written in PyTorch."""

import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402
from d2lpar.splitting import micro_batches  # noqa: E402


def stub_none(*args, **kwargs):
    return None


def backward_shards(X, y, device_params, devices):
    """Each device's loss gradient of its shard, added into .grad (as
    PyTorch's backward does); returns the X shards."""
    X_shards, y_shards = tdp.split_batch(X, y, devices)
    for Xs, ys, params in zip(X_shards, y_shards, device_params):
        tdp.cross_entropy(tdp.lenet(Xs, params), ys).sum().backward()
    return X_shards


def zero_grads(device_params):
    for params in device_params:
        for p in params:
            p.grad.zero_()


def sum_grads(device_params):
    for j in range(len(device_params[0])):
        tdp.allreduce([params[j].grad for params in device_params])


@torch.no_grad()
def sgd(params, lr, n):
    for p in params:
        p -= lr * p.grad / n


# ------------------------------------------------------------- train_batch


def train_batch(X, y, device_params, devices, lr):
    zero_grads(device_params)
    backward_shards(X, y, device_params, devices)
    sum_grads(device_params)
    for params in device_params:
        sgd(params, lr, X.shape[0])


def tb_shard_scale(X, y, device_params, devices, lr):
    zero_grads(device_params)
    X_shards = backward_shards(X, y, device_params, devices)
    sum_grads(device_params)
    for params, Xs in zip(device_params, X_shards):
        sgd(params, lr, Xs.shape[0])


def tb_no_allreduce(X, y, device_params, devices, lr):
    zero_grads(device_params)
    backward_shards(X, y, device_params, devices)
    for params in device_params:
        sgd(params, lr, X.shape[0])


def tb_first_grad(X, y, device_params, devices, lr):
    zero_grads(device_params)
    backward_shards(X, y, device_params, devices)
    for params in device_params[1:]:
        for q, q0 in zip(params, device_params[0]):
            q.grad.copy_(q0.grad)
    for params in device_params:
        sgd(params, lr, X.shape[0])


def tb_rebinds(X, y, device_params, devices, lr):
    zero_grads(device_params)
    backward_shards(X, y, device_params, devices)
    sum_grads(device_params)
    for params in device_params:
        for j in range(len(params)):
            new = params[j].detach() - lr * params[j].grad / X.shape[0]
            params[j] = new.requires_grad_()


def tb_shares_tensors(X, y, device_params, devices, lr):
    tdp.train_batch(X, y, device_params, devices, lr)
    for params in device_params[1:]:
        params[:] = device_params[0]


def tb_never_zeroes(X, y, device_params, devices, lr):
    # backward adds into .grad: the previous step's gradient stays in.
    backward_shards(X, y, device_params, devices)
    sum_grads(device_params)
    for params in device_params:
        sgd(params, lr, X.shape[0])


# ------------------------------------------------------------ accumulation


def train_batch_accumulate(X, y, device_params, devices, lr, accumulate=1):
    zero_grads(device_params)  # once: backward adds every micro-batch's
    for Xm, ym in micro_batches(X, y, accumulate):
        backward_shards(Xm, ym, device_params, devices)
    sum_grads(device_params)
    for params in device_params:
        sgd(params, lr, X.shape[0])


def acc_last_only(X, y, device_params, devices, lr, accumulate=1):
    for Xm, ym in micro_batches(X, y, accumulate):
        zero_grads(device_params)  # drops the earlier micro-batches
        backward_shards(Xm, ym, device_params, devices)
    sum_grads(device_params)
    for params in device_params:
        sgd(params, lr, X.shape[0])


def acc_steps(X, y, device_params, devices, lr, accumulate=1):
    for Xm, ym in micro_batches(X, y, accumulate):
        tdp.train_batch(Xm, ym, device_params, devices, lr)


def acc_never_zeroed(X, y, device_params, devices, lr, accumulate=1):
    for Xm, ym in micro_batches(X, y, accumulate):
        backward_shards(Xm, ym, device_params, devices)
    sums = [[p.grad.clone() for p in params] for params in device_params]
    for j in range(len(sums[0])):
        tdp.allreduce([s[j] for s in sums])
    with torch.no_grad():
        for params, s in zip(device_params, sums):
            for p, g in zip(params, s):
                p -= lr * g / X.shape[0]


def acc_micro_scale(X, y, device_params, devices, lr, accumulate=1):
    size = micro_batches(X, y, accumulate)[0][0].shape[0]
    train_batch_accumulate(
        X, y, device_params, devices, lr * X.shape[0] / size, accumulate
    )


def acc_no_allreduce(X, y, device_params, devices, lr, accumulate=1):
    zero_grads(device_params)
    for Xm, ym in micro_batches(X, y, accumulate):
        backward_shards(Xm, ym, device_params, devices)
    for params in device_params:
        sgd(params, lr, X.shape[0])


# ---------------------------------------------------------------- overlap


def _numbers(step):
    losses, corrects = step
    return sum(a.item() for a in losses), sum(a.item() for a in corrects)


def train_epoch(train_iter, device_params, devices, lr):
    loss = correct = examples = 0.0
    pending = None
    for X, y in train_iter:
        step = tdp.train_batch(X, y, device_params, devices, lr)
        if pending is not None:  # the next step is queued: read this one
            loss, correct = map(sum, zip((loss, correct), _numbers(pending)))
        pending = step
        examples += X.shape[0]
    loss, correct = map(sum, zip((loss, correct), _numbers(pending)))
    return loss / examples, correct / examples


def epoch_summed_tensors(train_iter, device_params, devices, lr):
    # Adds the tensors (no read) and reads the previous step's running
    # total after the next step is queued: two steps in flight, right.
    total, pending, examples = None, None, 0
    for X, y in train_iter:
        losses, corrects = tdp.train_batch(X, y, device_params, devices, lr)
        if pending is not None:
            total = pending if total is None else total + pending
            total[0].item()  # reads the older steps
        pending = torch.stack([sum(losses), sum(corrects)])
        examples += X.shape[0]
    total = pending if total is None else total + pending
    loss, correct = total.tolist()
    return loss / examples, correct / examples


def ep_synced(train_iter, device_params, devices, lr):
    # Reads each step's numbers at once, through float().
    loss = correct = n = 0
    for X, y in train_iter:
        losses, corrects = tdp.train_batch(X, y, device_params, devices, lr)
        loss += sum(float(a) for a in losses)
        correct += sum(float(a) for a in corrects)
        n += X.shape[0]
    return loss / n, correct / n


def ep_synchronizes(train_iter, device_params, devices, lr):
    # Waits for the devices after every batch (on a CPU-only PyTorch
    # there is nothing to wait for, and synchronize raises).
    steps, n = [], 0
    for X, y in train_iter:
        steps.append(tdp.train_batch(X, y, device_params, devices, lr))
        try:
            torch.cuda.synchronize()
        except (AssertionError, RuntimeError):
            pass
        n += X.shape[0]
    loss, correct = map(sum, zip(*map(_numbers, steps)))
    return loss / n, correct / n


def ep_sums_then_reads(train_iter, device_params, devices, lr):
    # Sums each step's tensors and reads the sum at once: a read of the
    # step all the same.
    loss = correct = n = 0
    for X, y in train_iter:
        losses, corrects = tdp.train_batch(X, y, device_params, devices, lr)
        both = torch.stack([sum(losses), sum(corrects)])
        step_loss, step_correct = both.tolist()
        loss, correct, n = loss + step_loss, correct + step_correct, n + len(X)
    return loss / n, correct / n


def ep_never_reads(train_iter, device_params, devices, lr):
    for X, y in train_iter:
        tdp.train_batch(X, y, device_params, devices, lr)


def ep_reads_at_end(train_iter, device_params, devices, lr):
    steps, n = [], 0
    for X, y in train_iter:
        steps.append(tdp.train_batch(X, y, device_params, devices, lr))
        n += X.shape[0]
    loss, correct = map(sum, zip(*map(_numbers, steps)))
    return loss / n, correct / n


def ep_batch_means(train_iter, device_params, devices, lr):
    pending, means = None, []
    for X, y in train_iter:
        step = tdp.train_batch(X, y, device_params, devices, lr)
        if pending is not None:
            means.append(_numbers(pending[0]) + (pending[1],))
        pending = (step, X.shape[0])
    means.append(_numbers(pending[0]) + (pending[1],))
    return (
        sum(loss / n for loss, _, n in means) / len(means),
        sum(c / n for _, c, n in means) / len(means),
    )


def ep_returns_tensors(train_iter, device_params, devices, lr):
    loss, correct = train_epoch(train_iter, device_params, devices, lr)
    return torch.tensor(loss), torch.tensor(correct)


def ep_skips_last(train_iter, device_params, devices, lr):
    return train_epoch(list(train_iter)[:-1], device_params, devices, lr)


def ep_local(train_iter, device_params, devices, lr):
    examples = 0
    for X, y in train_iter:  # each replica steps on its own shard's grad
        zero_grads(device_params)
        backward_shards(X, y, device_params, devices)
        for params in device_params:
            sgd(params, lr, X.shape[0])
        examples += X.shape[0]
    return 0.0, 0.0


BUGS = [
    (tdp.check_train_batch, tb_shard_scale, 'wrong-scale'),
    (tdp.check_train_batch, tb_no_allreduce, 'replicas-diverge'),
    (tdp.check_train_batch, tb_first_grad, 'not-one-device-step'),
    (tdp.check_train_batch, tb_rebinds, 'not-in-place'),
    (tdp.check_train_batch, tb_shares_tensors, 'changed-device'),
    (tdp.check_train_batch, tb_never_zeroes, 'stale-gradients'),
    (tdp.check_train_batch, stub_none, 'did-nothing'),
    (tdp.check_grad_accumulation, acc_last_only, 'not-accumulated'),
    (tdp.check_grad_accumulation, acc_steps, 'stepped-per-micro-batch'),
    (tdp.check_grad_accumulation, acc_never_zeroed, 'stale-gradients'),
    (tdp.check_grad_accumulation, acc_micro_scale, 'wrong-scale'),
    (tdp.check_grad_accumulation, acc_no_allreduce, 'replicas-diverge'),
    (tdp.check_grad_accumulation, stub_none, 'did-nothing'),
    (tdp.check_train_epoch, ep_synced, 'synced-every-batch'),
    (tdp.check_train_epoch, ep_synchronizes, 'synced-every-batch'),
    (tdp.check_train_epoch, ep_sums_then_reads, 'synced-every-batch'),
    (tdp.check_train_epoch, ep_never_reads, 'too-far-ahead'),
    (tdp.check_train_epoch, ep_reads_at_end, 'too-far-ahead'),
    (tdp.check_train_epoch, ep_batch_means, 'wrong-epoch-stats'),
    (tdp.check_train_epoch, ep_returns_tensors, 'bad-return'),
    (tdp.check_train_epoch, ep_skips_last, 'not-one-device-step'),
    (tdp.check_train_epoch, ep_local, 'replicas-diverge'),
]


@pytest.mark.parametrize(
    'check, bug, code',
    BUGS,
    ids=[f'{c.__name__}-{b.__name__}-{code}' for c, b, code in BUGS],
)
def test_each_mistake_is_named(check, bug, code):
    """The wrong solution fails every case it fails with exactly the
    mistake it makes, the hint in PyTorch's terms."""
    report = check(bug)
    assert not report and report.framework == 'torch'
    assert report.mistakes == [code], str(report)
    assert f'mistake: {code}' in str(report)


CORRECT = [
    (tdp.check_train_batch, train_batch),
    (tdp.check_train_batch, tdp.train_batch),
    (tdp.check_grad_accumulation, train_batch_accumulate),
    (tdp.check_train_epoch, train_epoch),
    (tdp.check_train_epoch, epoch_summed_tensors),
]


@pytest.mark.parametrize(
    'check, fn',
    CORRECT,
    ids=[f'{c.__name__}-{f.__name__}' for c, f in CORRECT],
)
def test_a_correct_pytorch_solution_passes(check, fn):
    report = check(fn)
    assert report, str(report)
    assert report.cases > 0 and report.framework == 'torch'


def test_every_training_mistake_of_the_mxnet_checks_is_named_here():
    """The codes the MXNet tests plant in train_batch, accumulation and
    the epoch are each planted, and named, in PyTorch too."""
    pytest.importorskip('mxnet')
    import test_grading_overlap
    import test_grading_training

    mxnet = {
        code
        for bugs in (test_grading_training.BUGS, test_grading_overlap.BUGS)
        for _, _, code in bugs
    }
    assert mxnet <= {code for _, _, code in BUGS}


def test_the_cases_are_the_mxnet_checks():
    """The same cases, and the same batches, as the MXNet checks."""
    pytest.importorskip('mxnet')
    from d2lpar.grading import overlap, steps, training

    assert [c['what'] for c in training.train_cases()] == [
        c['what'] for c in tdp.grading.train_cases()
    ]
    assert training.accumulation_cases() == (tdp.grading.accumulation_cases())
    assert overlap.epoch_cases() == tdp.grading.epoch_cases()
    mx_batches = steps.make_batches((3, 5), seed=2)
    torch_batches = tdp.grading.STEPS.batches((3, 5), seed=2)
    for (mX, my), (tX, ty) in zip(mx_batches, torch_batches):
        assert (mX.asnumpy() == tX.numpy()).all()
        assert (my.asnumpy() == ty.numpy()).all()


def test_a_read_through_a_sum_is_a_read_of_every_step_in_it():
    """A tensor made of two steps' numbers reads both when read; adding
    them reads neither."""
    from d2lpar.grading.battery import InFlight
    from d2lpar.torch.grading import _numbers, _Watch

    order = InFlight(3)
    with _Watch(order):
        a, b = (
            _numbers(torch.tensor(1.0), {0}),
            _numbers(torch.tensor(2.0), {1}),
        )
        total = a + b
        assert order.passed == [False, False, False]
        assert float(total) == 3.0
    assert order.passed == [True, True, False]
    assert order.early == [0, 1]  # nothing was queued
