"""Checks for parameter averaging (the epoch's check is in
:mod:`d2lpar.grading.overlap`)."""

from mxnet import np

from ..devices import devices as make_devices
from .allreduce import diagnose_sum
from .battery import average_case, average_cases
from .report import run_cases


def _make(values, case):
    return [
        [np.array(v, dtype=case['dtype'], ctx=d) for v in vs]
        for vs, d in zip(values, make_devices(case['k']))
    ]


def _diagnose(originals, inputs, case, list_after):
    return diagnose_sum(originals, inputs, case, list_after, mean=True)


def _average_case(fn, case):
    return average_case(fn, case, _make, _diagnose)


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
