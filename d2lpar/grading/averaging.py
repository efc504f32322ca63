"""Checks for parameter averaging (the epoch's check is in
:mod:`d2lpar.grading.overlap`)."""

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from .allreduce import diagnose_sum
from .report import call, run_cases

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
    >>> import d2lpar as dp
    >>> from d2lpar.grading import reference
    >>> bool(dp.check_average_params(reference.average_params))
    True
    """
    return run_cases(
        'check_average_params', fn, average_cases(), _average_case
    )
