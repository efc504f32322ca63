"""Check a ring allreduce written as a schedule of transfers."""

from ..comm.algorithms import run_schedule
from .allreduce import diagnose_sum, make_inputs
from .battery import schedule_case, schedule_cases
from .report import run_cases


def _run(schedule, case):
    data, inputs = make_inputs(case)
    originals = list(data)
    run_schedule(data, schedule)
    return diagnose_sum(originals, inputs, case)


def _schedule_case(fn, case):
    return schedule_case(fn, case, _run)


def check_ring_schedule(fn):
    """Check a student's ring allreduce schedule on k = 1..5 devices.

    ``fn(k)`` must return a schedule like
    :func:`d2lpar.comm.ring_schedule`: a list of steps, each a list
    of :class:`d2lpar.comm.Transfer` where device ``i`` only sends
    to ``(i + 1) % k``. :func:`d2lpar.run_schedule` of it must leave the
    sum on every device, every device must send and receive at most
    ``2 (k-1) N / k`` of an array's ``N`` elements (counted in bytes by
    :func:`d2lpar.comm.traffic`), in ``2 (k-1)`` steps.

    Parameters
    ----------
    fn : callable
        The student's ``ring_schedule(k)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_ring_schedule(dp.comm.ring_schedule))
    True
    """
    return run_cases(
        'check_ring_schedule', fn, schedule_cases(), _schedule_case
    )
