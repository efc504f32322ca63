"""Check a student's split_batch: every example once, in order, balanced."""

import operator

from mxnet import np

from ..devices import devices as make_devices
from .battery import batch_values, shard_problem, split_case, split_cases
from .report import run_cases

__all__ = ['check_split_batch', 'make_batch', 'split_cases']


def make_batch(n, feature, dtype):
    """Example i has i in its first feature and label 100 + i."""
    X, y = batch_values(n, feature)
    return np.array(X, dtype=dtype), np.array(y, dtype='int32')


def _split_case(fn, case):
    devs = make_devices(case['k'])
    X, y = make_batch(case['n'], case['feature'], case['dtype'])
    problem = shard_problem(X, devs, lambda a: a.ctx, operator.eq)
    return split_case(fn, case, X, y, devs, problem, lambda a: a.asnumpy())


def check_split_batch(fn):
    """Check a student's split_batch on k = 1..5 devices.

    ``fn(X, y, devices)`` must behave like :func:`d2lpar.split_batch`:
    return ``(X_shards, y_shards)``, one contiguous shard per device on
    that device, every example exactly once and in order, shard sizes
    differing by at most one, and raise ValueError when there are fewer
    examples than devices.

    Parameters
    ----------
    fn : callable
        The student's ``split_batch(X, y, devices)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_split_batch(dp.split_batch))
    True
    """
    return run_cases('check_split_batch', fn, split_cases(), _split_case)
