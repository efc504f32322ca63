"""Check a ring allreduce written as a schedule of transfers."""

import numpy as onp

from ..comm.algorithms import run_schedule
from ..comm.schedules import Transfer, traffic
from .allreduce import diagnose_sum, make_inputs
from .report import call, run_cases


def schedule_cases():
    """k = 1..5; arrays of k*6 elements (traffic checked exactly), and
    of sizes below and not divisible by k (sums checked)."""
    cases = []
    for k in range(1, 6):
        for n in (6 * k, 2 * k + 1, max(k - 1, 1)):
            for dtype in ('float32', 'float64'):
                cases.append(
                    {
                        'k': k,
                        'shape': (n,),
                        'dtype': dtype,
                        'what': f'k={k} devices, {n} {dtype} elements',
                    }
                )
    return cases


def _structure(schedule, k):
    """A message when ``schedule`` is not a list of lists of Transfer."""
    if not isinstance(schedule, (list, tuple)):
        return f'returned {type(schedule).__name__}, not a list of steps'
    for s, step in enumerate(schedule):
        if not isinstance(step, (list, tuple)):
            return f'step {s} is a {type(step).__name__}, not a list'
        for t in step:
            if not isinstance(t, Transfer):
                return f'step {s} holds {t!r}, not a Transfer'
            if not (0 <= t.src < k and 0 <= t.dst < k and t.src != t.dst):
                return f'step {s}: {t} names a device outside range({k})'
            if t.chunk is not None and not 0 <= t.chunk < k:
                return f'step {s}: {t} names a chunk outside range({k})'
    return None


def _schedule_case(fn, case):
    k, n = case['k'], case['shape'][0]
    schedule = call(fn, k)
    if schedule is None:
        return ('bad-return', 'expected a list of steps; got None')
    problem = _structure(schedule, k)
    if problem:
        return ('not-a-schedule', problem)
    for s, step in enumerate(schedule):
        for t in step:
            if t.dst != (t.src + 1) % k:
                return (
                    'not-a-ring',
                    f'step {s}: {t} sends from '
                    f'{t.src} to {t.dst}, not to {(t.src + 1) % k}',
                )
    data, inputs = make_inputs(case)
    originals = list(data)
    run_schedule(data, schedule)
    found = diagnose_sum(originals, inputs, case)
    if found:
        return found
    if n % k == 0:
        itemsize = onp.dtype(case['dtype']).itemsize
        bound = 2 * (k - 1) * n * itemsize // k
        sent, received = traffic(schedule, k, n, itemsize)
        if max(sent + received) > bound:
            return (
                'too-much-traffic',
                f'expected at most 2 (k-1) N / k = {bound // itemsize} '
                f'of the N = {n} elements ({bound} bytes) per device; '
                f'bytes sent {sent}, received {received}',
            )
    steps = [step for step in schedule if step]  # empty steps cost 0
    if len(steps) > 2 * (k - 1):
        return (
            'too-many-steps',
            f'expected {2 * (k - 1)} steps, got {len(steps)}',
        )
    return None


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
