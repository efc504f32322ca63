"""Checks for parameter averaging and for an epoch without per-batch
synchronisation."""

import mxnet as mx
import numpy as onp
from mxnet import np, npx

from ..devices import devices as make_devices
from .allreduce import diagnose_sum
from .report import call, run_cases
from .steps import (
    LR,
    diagnose_step,
    make_batches,
    one_device_step,
    start,
    values,
)

SHAPES = [(3, 2), (4,), (1,)]  # 1 element: fewer than most k


def average_cases():
    """k = 1..5, three parameters (one smaller than k), both dtypes."""
    return [
        {
            'k': k,
            'dtype': dtype,
            'what': f'k={k} replicas of '
            f'{len(SHAPES)} {dtype} parameters, shapes {SHAPES}',
        }
        for k in range(1, 6)
        for dtype in ('float32', 'float64')
    ]


def _average_case(fn, case):
    rng = onp.random.default_rng(case['k'])
    devs = make_devices(case['k'])
    inputs = [
        [rng.integers(1, 9, s).astype(case['dtype']) for s in SHAPES]
        for _ in devs
    ]
    if case['dtype'] == 'float64':
        inputs = [
            [v + 1e-9 * (i + 1) for v in vs] for i, vs in enumerate(inputs)
        ]
    device_params = [
        [np.array(v, dtype=case['dtype'], ctx=d) for v in vs]
        for vs, d in zip(inputs, devs)
    ]
    objects = [list(p) for p in device_params]
    call(fn, device_params)
    for j in range(len(SHAPES)):
        found = diagnose_sum(
            [o[j] for o in objects],
            [v[j] for v in inputs],
            case,
            [p[j] for p in device_params],
            mean=True,
        )
        if found:
            code, text = found
            return code, f'parameter {j}: {text}'
    return None


def check_average_params(fn):
    """Check a student's parameter averaging on k = 1..5 replicas.

    ``fn(device_params)`` must replace, in place, every replica's
    parameters by their mean over the replicas: afterwards each
    ``device_params[i][j]`` (the same array object, on its device and in
    its dtype) holds ``sum_i device_params[i][j] / k``. It returns None.

    Parameters
    ----------
    fn : callable
        The student's ``average_params(device_params)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> from d2lpar.homework import reference
    >>> bool(check_average_params(reference.average_params))
    True
    """
    return run_cases(
        'check_average_params', fn, average_cases(), _average_case
    )


class _CountWaits:
    """Count calls to npx.waitall and mx.nd.waitall while active."""

    def __enter__(self):
        self.count, self.saved = 0, (npx.waitall, mx.nd.waitall)

        def counting(*args, **kwargs):
            self.count += 1
            return self.saved[0](*args, **kwargs)

        npx.waitall = mx.nd.waitall = counting
        return self

    def __exit__(self, *exc):
        npx.waitall, mx.nd.waitall = self.saved


def epoch_cases():
    """k = 1..3; four uneven batches per epoch."""
    return [
        {
            'k': k,
            'sizes': (2 * k + 1, k + 1, 3 * k, k + 2),
            'what': f'k={k} devices, an epoch of 4 batches of '
            f'{2 * k + 1}, {k + 1}, {3 * k} and {k + 2} examples',
        }
        for k in range(1, 4)
    ]


def _epoch_case(fn, case):
    devs, device_params, reference = start(case['k'], seed=case['k'])
    batches = make_batches(case['sizes'], case['k'])
    objects = [list(p) for p in device_params]
    with _CountWaits() as waits:
        call(fn, batches, device_params, devs, LR)
    before = values(reference)
    for X, y in batches:
        one_device_step(reference, X, y)
    found = diagnose_step(
        before, device_params, objects, devs, values(reference), 0
    )
    if found:
        code, text = found
        return code, text.replace('after step 1', 'after the epoch')
    if waits.count >= len(batches):
        return (
            'synced-every-batch',
            f'npx.waitall was called '
            f'{waits.count} times for {len(batches)} batches; '
            f'expected once at the end',
        )
    return None


def check_train_epoch(fn):
    """Check a student's epoch without per-batch synchronisation.

    ``fn(train_iter, device_params, devices, lr)`` runs
    :func:`d2lpar.train_batch` on every batch of ``train_iter`` without
    waiting for the devices between batches, and waits once at the end
    (``npx.waitall()``). The replicas must equal plain SGD over the same
    batches on one device, and ``npx.waitall`` may be called fewer times
    than there are batches.

    Parameters
    ----------
    fn : callable
        The student's ``train_epoch``.

    Returns
    -------
    Report

    Examples
    --------
    >>> from d2lpar.homework import reference
    >>> bool(check_train_epoch(reference.train_epoch))
    True
    """
    return run_cases('check_train_epoch', fn, epoch_cases(), _epoch_case)
