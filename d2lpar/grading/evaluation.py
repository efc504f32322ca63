"""Check a student's multi-device accuracy against the one-device count."""

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from ..model import init_lenet_params, lenet
from ..parameters import get_params
from ..splitting import shard_sizes
from .report import call, run_cases


def evaluate_cases():
    """k = 1..5; equal batches for k=1, then uneven batches (2k+1 and
    k+2 examples) whose shards differ in size."""
    cases = [
        {
            'k': 1,
            'batches': (6, 6),
            'what': 'k=1 device, batches of 6 and 6 examples',
        }
    ]
    for k in range(2, 6):
        batches = (2 * k + 1, k + 2)
        cases.append(
            {
                'k': k,
                'batches': batches,
                'what': f'k={k} devices, '
                f'batches of {batches[0]} and {batches[1]} '
                f'examples',
            }
        )
    return cases


def make_data(case):
    """Images and labels with a known pattern of correct predictions.

    Returns the batches, the replicas and, per batch, a 0/1 vector of
    which examples the reference LeNet classifies correctly: all of the
    first batch's first shard, then every third example.
    """
    rng = onp.random.default_rng(case['k'])
    params = init_lenet_params(seed=case['k'], scale=0.1)
    devs = make_devices(case['k'])
    batches, right = [], []
    for b, n in enumerate(case['batches']):
        X = np.array(rng.random((n, 1, 28, 28)), dtype='float32')
        pred = lenet(X, params).argmax(axis=1).asnumpy().astype('int32')
        ok = (onp.arange(n) % 3 == 0).astype(int)
        if b == 0:
            ok[: shard_sizes(n, case['k'])[0]] = 1
        y = onp.where(ok == 1, pred, (pred + 1) % 10).astype('int32')
        batches.append((X, np.array(y, dtype='int32')))
        right.append(ok)
    return batches, [get_params(params, d) for d in devs], devs, right


def alternatives(right, k):
    """The accuracy, and what the usual mistakes compute instead."""
    shards = [
        onp.split(r, onp.cumsum(shard_sizes(len(r), k))[:-1]) for r in right
    ]
    every = onp.concatenate(right)
    return {
        None: every.mean(),
        'averaged-shards': onp.mean([s.mean() for b in shards for s in b]),
        'averaged-batches': onp.mean([r.mean() for r in right]),
        'first-shard-only': (
            sum(b[0].sum() for b in shards) / sum(len(b[0]) for b in shards)
        ),
    }


def _evaluate_case(fn, case):
    batches, device_params, devs, right = make_data(case)
    got = call(fn, device_params, batches, devs)
    if got is None:
        return ('bad-return', 'expected the accuracy as a float; got None')
    try:
        got = float(got)
    except (TypeError, ValueError):
        return (
            'bad-return',
            f'expected the accuracy as a float; got {got!r:.100}',
        )
    options = alternatives(right, case['k'])
    want = options.pop(None)
    if abs(got - want) < 1e-6:
        return None
    text = (
        f'expected accuracy {want:.6f} '
        f'({int(sum(r.sum() for r in right))} correct of '
        f'{sum(case["batches"])}); got {got:.6f}'
    )
    for code, value in options.items():
        if abs(got - value) < 1e-6:
            return code, text
    return 'wrong-accuracy', text


def check_evaluate(fn):
    """Check a student's multi-device accuracy on k = 1..5 devices.

    ``fn(device_params, data_iter, devices)`` must behave like
    :func:`d2lpar.evaluate_accuracy_sharded`: split every batch over the
    devices, let device ``i`` score its shard with ``device_params[i]``
    and LeNet (:func:`d2lpar.lenet`), and return the fraction of correct
    predictions over all examples, as a float. Batches and shards of
    different sizes must count by their size.

    Parameters
    ----------
    fn : callable
        The student's ``evaluate_accuracy_sharded(device_params,
        data_iter, devices)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_evaluate(dp.evaluate_accuracy_sharded))
    True
    """
    return run_cases('check_evaluate', fn, evaluate_cases(), _evaluate_case)
