"""What a training step did to the replicas, compared with one device.

Shared by the checks of train_batch, gradient accumulation and the
epoch without per-batch synchronisation: all of them must leave every
replica equal to the parameters of plain SGD on one device.
"""

import warnings

import numpy as onp
from mxnet import np

from ..devices import devices as make_devices
from ..model import init_lenet_params
from ..parameters import get_params
from ..threads import ThreadBudgetWarning
from ..training import train_batch
from .report import show

LR = 0.5
# float32 sums over devices add in another order than on one device.
RTOL, ATOL = 1e-4, 1e-6


def make_batches(sizes, seed):
    """Random images and labels, one batch per size."""
    rng = onp.random.default_rng(seed)
    return [
        (
            np.array(rng.random((n, 1, 28, 28)), dtype='float32'),
            np.array(rng.integers(0, 10, n), dtype='int32'),
        )
        for n in sizes
    ]


def start(k, seed):
    """Devices, their replicas, and a one-device reference copy."""
    params = init_lenet_params(seed=seed, scale=0.1)
    devs = make_devices(k)
    reference = get_params(params, make_devices(1)[0])
    return devs, [get_params(params, d) for d in devs], reference


def one_device_step(params, X, y, lr=LR):
    """Plain SGD on one device with the library's train_batch."""
    with warnings.catch_warnings():
        # After a k-device case cpu(0) keeps one thread: only the
        # reference's speed suffers, which the student need not hear of.
        warnings.simplefilter('ignore', ThreadBudgetWarning)
        train_batch(X, y, [params], [params[0].ctx], lr)


def values(params):
    """Numpy copies of a replica."""
    return [p.asnumpy() for p in params]


def _flat(arrays):
    return onp.concatenate([a.ravel().astype('float64') for a in arrays])


def same(a, b, rtol=RTOL, atol=ATOL):
    """Two lists of arrays agree to float32 rounding."""
    return all(
        x.shape == y.shape and onp.allclose(x, y, rtol, atol)
        for x, y in zip(a, b)
    )


def diagnose_step(
    before, device_params, objects, devs, want, step, alternatives=()
):
    """Name what went wrong in one step, or None when it is right.

    Parameters
    ----------
    before : list of numpy.ndarray
        The replicas' values before the step (all equal).
    device_params : list of list of mxnet.numpy.ndarray
        The replicas after the step.
    objects : list of list
        The array objects the caller passed (identity is checked).
    devs : list of mxnet.Context
    want : list of numpy.ndarray
        The one-device parameters after the step.
    step : int
        Which step (0 first): a later step that alone is wrong points
        at state leaking between steps.
    alternatives : iterable of (code, list of numpy.ndarray)
        What known mistakes would have produced.
    """
    for i, (params, objs) in enumerate(zip(device_params, objects)):
        for j, (p, o) in enumerate(zip(params, objs)):
            if p.ctx != devs[i]:
                return (
                    'changed-device',
                    f'device_params[{i}][{j}] now '
                    f'lives on {p.ctx}, not on {devs[i]}',
                )
            if p is not o:
                return (
                    'not-in-place',
                    f'device_params[{i}][{j}] was '
                    f'replaced by a new array; update the arrays in '
                    f'place (p[:] = p - lr * p.grad / n), otherwise '
                    f'their attached gradients are lost',
                )
    got = [values(params) for params in device_params]
    tag = f'after step {step + 1}: '
    ref = _flat(want) - _flat(before)
    ratios = [_ratio(_flat(g) - _flat(before), ref) for g in got]
    for i in range(1, len(got)):
        if not same(got[i], got[0], 1e-5, 1e-7):
            j = next(
                j
                for j, (a, b) in enumerate(zip(got[i], got[0]))
                if not onp.allclose(a, b, 1e-5, 1e-7)
            )
            if None not in ratios:
                return (
                    'wrong-scale',
                    f'{tag}the replicas moved in the '
                    f'right direction but by {_fmt(ratios)} times the '
                    f'expected step (shard sizes differ, so dividing '
                    f'by the shard size breaks the replicas apart)',
                )
            return (
                'replicas-diverge',
                f'{tag}parameter {j} on device '
                f'{i} = {show(got[i][j])} but on device 0 = '
                f'{show(got[0][j])}',
            )
    if same(got[0], want):
        return None
    delta = _flat(got[0]) - _flat(before)
    j = next(
        j
        for j, (a, b) in enumerate(zip(got[0], want))
        if not onp.allclose(a, b, RTOL, ATOL)
    )
    text = (
        f'{tag}expected parameter {j} = {show(want[j])} (one SGD '
        f'step on one device); got {show(got[0][j])}'
    )
    if not onp.any(delta):
        return 'did-nothing', text + ' (unchanged)'
    for code, alt in alternatives:
        if same(got[0], alt):
            return code, text
    if step > 0:
        return 'stale-gradients', text
    if ratios[0] is not None:
        return (
            'wrong-scale',
            f'{text}; your update is {ratios[0]:.4g} times the expected one',
        )
    return 'not-one-device-step', text


def _ratio(delta, ref):
    """c when ``delta`` is c times ``ref`` (c not 0 or 1), else None."""
    c = delta @ ref / (ref @ ref)
    off = onp.linalg.norm(delta - c * ref) > 1e-3 * onp.linalg.norm(ref)
    return None if off or abs(c) < 1e-3 else float(c)


def _fmt(ratios):
    return ', '.join(f'{r:.4g}' for r in ratios)
