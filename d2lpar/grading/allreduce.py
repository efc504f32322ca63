"""Checks for an allreduce written by a student, and the battery."""

import functools
import math

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from .report import call, run_cases, show
from .spy import Spy

# Tolerances per dtype: float64 results must keep float64's precision,
# which is how a sum computed in float32 is caught.
RTOL = {'float32': 1e-5, 'float64': 1e-12}


def allreduce_cases():
    """k = 1..5 devices; sizes below, not divisible by, and a multiple of
    k; float32 and float64; one 2-D shape."""
    cases = []
    for k in range(1, 6):
        for shape in [(max(k - 1, 1),), (2 * k + 1,), (3, 2 * k)]:
            for dtype in ('float32', 'float64'):
                size = int(onp.prod(shape))
                cases.append(
                    {
                        'k': k,
                        'shape': shape,
                        'dtype': dtype,
                        'what': f'k={k} devices, shape {shape} '
                        f'({size} element'
                        f'{"s" if size > 1 else ""}), '
                        f'{dtype}',
                    }
                )
    return cases


def make_inputs(case, seed=0):
    """One array per device; float64 values that float32 cannot hold."""
    rng = onp.random.default_rng(seed + case['k'])
    devs = make_devices(case['k'])
    values = [rng.integers(1, 9, case['shape']) for _ in devs]
    if case['dtype'] == 'float64':
        # 1e-9 is below float32's resolution at these magnitudes.
        values = [v + 1e-9 * (i + 1) for i, v in enumerate(values)]
    data = [
        np.array(v, dtype=case['dtype'], ctx=d) for v, d in zip(values, devs)
    ]
    return data, [onp.asarray(v, dtype=case['dtype']) for v in values]


def _close(got, want, dtype):
    return got.shape == want.shape and onp.allclose(
        got, want, rtol=RTOL[dtype], atol=0
    )


def diagnose_sum(
    originals, inputs, case, list_after=None, returned=None, mean=False
):
    """Name what is wrong with an allreduce's effect, or None if right.

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
    dtype, k = case['dtype'], len(inputs)
    total = onp.sum(onp.stack(inputs).astype('float64'), axis=0)
    want, other = (total / k, total) if mean else (total, total / k)
    got = [a.asnumpy() for a in originals]
    if all(_close(g, want, dtype) for g in got):
        return None
    expect = f'expected every array = {show(want)}'
    # Results that went somewhere else than the caller's arrays.
    elsewhere = []
    if list_after is not None:
        elsewhere += [
            (i, a) for i, a in enumerate(list_after) if a is not originals[i]
        ]
    if isinstance(returned, (list, tuple)):
        elsewhere += list(enumerate(returned))[:k]
    elif isinstance(returned, np.ndarray):  # the sum returned, not written
        elsewhere.append((0, returned))
    for i, a in elsewhere:
        if not isinstance(a, np.ndarray):
            continue
        if a.ctx != originals[i].ctx:
            return (
                'changed-device',
                f'data[{i}] was replaced by an array '
                f'on {a.ctx}, but the input lived on '
                f'{originals[i].ctx}',
            )
        if a.dtype != originals[i].dtype:
            return (
                'changed-dtype',
                f'data[{i}] was replaced by a '
                f'{a.dtype} array; the input was {originals[i].dtype}',
            )
    for i, a in elsewhere:
        if isinstance(a, np.ndarray) and _close(a.asnumpy(), want, dtype):
            return (
                'not-in-place',
                f'{expect}; the result is in a new array '
                f"(data[{i}] rebound or returned), but the caller's "
                f'data[{i}] still holds {show(got[i])}',
            )
    if all(_close(g, v, dtype) for g, v in zip(got, inputs)) and k > 1:
        return (
            'did-nothing',
            f'{expect}; got the inputs back unchanged, '
            f'e.g. data[1] = {show(got[1])}',
        )
    if k > 1 and all(_close(g, other, dtype) for g in got):
        return (
            'summed' if mean else 'averaged',
            f'{expect}; got {show(got[0])}',
        )
    if dtype == 'float64' and all(_close(g, want, 'float32') for g in got):
        err = max(float(onp.abs(g - want).max()) for g in got)
        return (
            'changed-dtype',
            f'{expect}; got it only to float32 '
            f'precision (off by up to {err:.2g})',
        )
    right = [i for i, g in enumerate(got) if _close(g, want, dtype)]
    wrong = [i for i in range(k) if i not in right]
    if right and all(_close(got[i], inputs[i], dtype) for i in wrong):
        return (
            'not-broadcast',
            f'{expect}; devices {right} hold it but '
            f'data[{wrong[0]}] still holds its input '
            f'{show(got[wrong[0]])}',
        )
    return (
        'wrong-mean' if mean else 'wrong-sum',
        f'{expect}; got data[0] = {show(got[0])}',
    )


def calls_library(spy, algorithm):
    """A ``calls-library`` finding if the student's code called one of
    the library's collectives, else None."""
    if not spy.library_calls:
        return None
    name = spy.library_calls[0]
    return (
        'calls-library',
        f"{algorithm} calls d2lpar's {name} (dp.{name}) instead of "
        f'moving and adding the arrays itself',
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


def _allreduce_case(fn, case, shape=None):
    data, inputs = make_inputs(case)
    originals, passed = list(data), data
    name = getattr(fn, '__name__', 'your allreduce')
    with Spy() as spy:
        returned = call(fn, passed)
    found = calls_library(spy, name) or diagnose_sum(
        originals, inputs, case, passed, returned
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
    ...): that is the ``calls-library`` mistake.

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
    if shape not in (None, 'tree', 'sharded'):
        raise ValueError(
            f"check_allreduce: shape is {shape!r}; pass 'tree', "
            f"'sharded' or None"
        )
    return run_cases(
        'check_allreduce',
        fn,
        allreduce_cases(),
        functools.partial(_allreduce_case, shape=shape),
    )


def check_tree_allreduce(fn):
    """:func:`check_allreduce` with ``shape='tree'`` (the grader's check
    of ``tree_allreduce``)."""
    return check_allreduce(fn, shape='tree')


def check_sharded_allreduce(fn):
    """:func:`check_allreduce` with ``shape='sharded'`` (the grader's
    check of ``sharded_allreduce``)."""
    return check_allreduce(fn, shape='sharded')
