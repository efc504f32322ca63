"""Checks for an allreduce written by a student, and the battery."""

import functools
import math
import operator

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from .battery import (
    RTOL,
    allreduce_cases,
    allreduce_shape,
    allreduce_values,
    calls_library,
    misplaced,
    results_elsewhere,
    shaped_checks,
)
from .battery import diagnose_sum as _diagnose
from .report import call, run_cases
from .spy import Spy

__all__ = [
    'RTOL',
    'allreduce_cases',
    'check_allreduce',
    'check_sharded_allreduce',
    'check_tree_allreduce',
    'diagnose_sum',
    'make_inputs',
    'mixed_devices',
    'transfer_shape',
]


def make_inputs(case, seed=0):
    """One array per device (:func:`d2lpar.grading.battery.
    allreduce_values`), and the NumPy values they started with."""
    values = allreduce_values(case, seed)
    data = [
        np.array(v, dtype=case['dtype'], ctx=d)
        for v, d in zip(values, make_devices(case['k']))
    ]
    return data, values


def diagnose_sum(
    originals, inputs, case, list_after=None, returned=None, mean=False
):
    """Name what is wrong with an allreduce's effect, or None if right
    (the judgement is :func:`d2lpar.grading.battery.diagnose_sum`'s).

    Parameters
    ----------
    originals : list of mxnet.numpy.ndarray
        The caller's arrays (the objects passed in).
    inputs : list of numpy.ndarray
        Their values before the call.
    case : dict
        Needs ``'dtype'``.
    list_after : list, optional
        The list object passed in, as it is after the call (slots may
        have been rebound).
    returned : object, optional
        What the function returned.
    mean : bool, optional
        The mean is wanted (parameter averaging), not the sum.
    """
    return _diagnose(
        [a.asnumpy() for a in originals],
        inputs,
        case,
        results_elsewhere(
            originals,
            list_after,
            returned,
            lambda a: isinstance(a, np.ndarray),
        ),
        misplaced=misplaced(
            originals, lambda a: a.ctx, operator.eq, noun='an array'
        ),
        host=lambda a: a.asnumpy(),
        mean=mean,
    )


def transfer_shape(spy, case, shape):
    """A ``not-a-tree``/``not-sharded`` finding when a device moved more
    than the algorithm ``shape`` lets it, else None.

    A tree: ``ceil(log2 k)`` rounds up and as many down, so no device
    sends or receives more than ``ceil(log2 k)`` whole arrays (gathering
    on device 0 makes it receive ``k - 1``). Sharded: device ``j`` owns
    chunk ``j``, so a device receives at most ``k - 1`` chunks to add
    and ``k - 1`` summed chunks, ``2 (k-1) ceil(N/k)`` elements.
    """
    k, n = case['k'], int(onp.prod(case['shape']))
    if k < 2:
        return None
    sent, received = spy.moved(k)
    rounds = math.ceil(math.log2(k))
    limit = {
        'tree': rounds * n,
        'sharded': 2 * (k - 1) * math.ceil(n / k),
    }[shape]
    moved = [max(s, r) for s, r in zip(sent, received)]
    worst = max(range(k), key=moved.__getitem__)
    if moved[worst] <= limit:
        return None
    if shape == 'tree':
        return (
            'not-a-tree',
            f'device {worst} sent {sent[worst]} and received '
            f'{received[worst]} elements ({moved[worst] / n:g} arrays of '
            f'{n}); a tree over k={k} devices takes ceil(log2 {k}) = '
            f'{rounds} rounds, so no device moves more than {rounds} '
            f'arrays each way',
        )
    return (
        'not-sharded',
        f'device {worst} sent {sent[worst]} and received '
        f'{received[worst]} elements; when each device owns one chunk '
        f'of {n} elements, a device moves at most 2 (k-1) ceil(N/k) = '
        f'{limit} each way',
    )


def mixed_devices(spy):
    """A ``mixed-devices`` finding when an operation other than a copy
    read or wrote arrays on two devices (:attr:`Spy.mixed`), else None.

    MXNet checks only that an operation's arrays are all on CPUs or all
    on GPUs: between CPU contexts it runs ``a + b`` or ``a[:] += b``
    with ``a`` and ``b`` on different devices without a copy, and
    between GPUs it would read the other GPU's memory directly, where
    peer access allows it at all; either way the transfers would go
    uncounted.
    """
    if not spy.mixed:
        return None
    operator_name, contexts = spy.mixed[0]
    return (
        'mixed-devices',
        f'an operation ({operator_name}) used arrays on '
        f'{" and ".join(contexts)} at once, without copying one to the '
        f"other's device first",
    )


def _allreduce_case(fn, case, shape=None):
    data, inputs = make_inputs(case)
    originals, passed = list(data), data
    name = getattr(fn, '__name__', 'your allreduce')
    with Spy() as spy:
        returned = call(fn, passed)
    found = (
        calls_library(spy.library_calls, name)
        or mixed_devices(spy)
        or diagnose_sum(originals, inputs, case, passed, returned)
    )
    if found is None and shape is not None:
        found = transfer_shape(spy, case, shape)
    return found


def check_allreduce(fn, shape=None):
    """Check a student's allreduce on k = 1..5 devices.

    ``fn(data)`` must behave like :func:`d2lpar.allreduce`: ``data`` is a
    list of same-shape, same-dtype arrays, one per device; afterwards
    every ``data[i]`` (the caller's array object, on its own device, in
    its own dtype) holds the elementwise sum. It returns None. Tree,
    sharded and ring allreduces all fit this signature. It must not call
    the library's collectives (``dp.allreduce``, ``dp.ring_allreduce``,
    ...): that is the ``calls-library`` mistake. Every operation
    other than a copy must use arrays of one device: MXNet checks only
    that the operands are all on CPUs or all on GPUs, so ``a + b`` mixes
    two CPU contexts without a copy, and between GPUs would read the
    other GPU's memory directly, where peer access allows it at all;
    either way the transfer is hidden (``mixed-devices``).

    Parameters
    ----------
    fn : callable
        The student's ``allreduce(data)``.
    shape : {None, 'tree', 'sharded'}, optional
        Also count the elements each device sends and receives (every
        cross-device ``copyto``/``as_in_ctx``) against the algorithm's
        shape: a tree moves at most ``ceil(log2 k)`` arrays per device
        each way, a sharded allreduce ``2 (k-1) ceil(N/k)`` elements.

    Returns
    -------
    Report
        ``bool(report)`` is True when every case passed; printing it
        names the first mistake.

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_allreduce(dp.sharded_allreduce))
    True
    """
    allreduce_shape(shape)
    return run_cases(
        'check_allreduce',
        fn,
        allreduce_cases(),
        functools.partial(_allreduce_case, shape=shape),
    )


check_tree_allreduce, check_sharded_allreduce = shaped_checks(check_allreduce)
