"""Checks for a student's train_batch and gradient accumulation."""

from mxnet import np

from ..model import lenet
from ..parameters import get_params
from ..training import (
    accumulate_gradients,
    cross_entropy,
    micro_batches,
    sgd,
    sum_gradients,
)
from .report import call, run_cases
from .steps import (
    LR,
    diagnose_step,
    make_batches,
    one_device_step,
    start,
    values,
)


def train_cases():
    """k = 1..5; three steps per case on 2k+1, k+1 and 3k examples."""
    return [
        {
            'k': k,
            'sizes': (2 * k + 1, k + 1, 3 * k),
            'what': f'k={k} devices, batches of {2 * k + 1}, {k + 1} '
            f'and {3 * k} examples',
        }
        for k in range(1, 6)
    ]


def _train_case(fn, case, accumulate=None):
    devs, device_params, reference = start(case['k'], seed=case['k'])
    kwargs = {} if accumulate is None else {'accumulate': accumulate}
    for step, (X, y) in enumerate(make_batches(case['sizes'], case['k'])):
        before = values(reference)
        objects = [list(p) for p in device_params]
        call(fn, X, y, device_params, devs, LR, **kwargs)
        one_device_step(reference, X, y)
        alts = (
            _accumulation_mistakes(before, X, y, accumulate)
            if accumulate
            else ()
        )
        found = diagnose_step(
            before, device_params, objects, devs, values(reference), step, alts
        )
        if found:
            return found
    return None


def check_train_batch(fn):
    """Check a student's data-parallel SGD step on k = 1..5 devices.

    ``fn(X, y, device_params, devices, lr)`` must behave like
    :func:`d2lpar.train_batch` (LeNet and cross-entropy by default):
    after each call every replica ``device_params[i]`` (the same array
    objects, on ``devices[i]``) equals the parameters after one SGD step
    on the whole batch on one device. Three steps per case, on batches
    that do not divide evenly.

    Parameters
    ----------
    fn : callable
        The student's ``train_batch``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_train_batch(dp.train_batch))
    True
    """
    return run_cases('check_train_batch', fn, train_cases(), _train_case)


def train_batch_accumulate(
    X,
    y,
    device_params,
    devices,
    lr,
    accumulate=1,
    net=lenet,
    loss=cross_entropy,
):
    """One SGD step on the batch, computed in ``accumulate`` parts.

    The reference of :func:`check_grad_accumulation`. The batch is cut
    into ``accumulate`` micro-batches; each is split over the devices
    and its gradient added to a running sum per device; one allreduce
    of the sums and one update dividing by the whole batch size follow
    (the library's :func:`d2lpar.training.accumulate_gradients`,
    :func:`d2lpar.training.sum_gradients` and
    :func:`d2lpar.training.sgd`). The result equals
    :func:`d2lpar.train_batch` on the whole batch, with the memory of
    one micro-batch.

    Parameters
    ----------
    X, y, device_params, devices, lr, net, loss
        As for :func:`d2lpar.train_batch`.
    accumulate : int, optional
        Number of micro-batches; each needs ``len(devices)`` examples.

    Raises
    ------
    ValueError
        If a micro-batch would hold fewer examples than devices.
    """
    if X.shape[0] < accumulate * len(devices):
        raise ValueError(
            f'train_batch_accumulate: {X.shape[0]} examples '
            f'cannot make {accumulate} micro-batches of at '
            f'least {len(devices)}; use fewer micro-batches'
        )
    accumulate_gradients(
        micro_batches(X, y, accumulate), device_params, devices, net, loss
    )
    sum_gradients(device_params)
    sgd(device_params, lr, X.shape[0])


def _accumulation_mistakes(before, X, y, accumulate):
    """What the usual accumulation mistakes would leave on one device."""
    micro = micro_batches(X, y, accumulate)
    n = X.shape[0]
    out = []
    last = get_params([np.array(v) for v in before], X.ctx)
    one_device_step(last, *micro[-1], lr=LR * micro[-1][0].shape[0] / n)
    out.append(('not-accumulated', values(last)))
    for scale in (False, True):
        params = get_params([np.array(v) for v in before], X.ctx)
        for Xm, ym in micro:
            one_device_step(
                params, Xm, ym, lr=LR * Xm.shape[0] / n if scale else LR
            )
        out.append(('stepped-per-micro-batch', values(params)))
    return out


def accumulation_cases():
    """k = 1..5 with 2 or 3 micro-batches (both for k=1); two steps each
    on batches that split unevenly."""
    cases = []
    for k, m in ((1, 2), (1, 3), (2, 3), (3, 2), (4, 3), (5, 2)):
        sizes = (m * k + 1, m * k + k - 1 or m * k)
        cases.append(
            {
                'k': k,
                'm': m,
                'sizes': sizes,
                'what': f'k={k} devices, accumulate={m}, batches '
                f'of {sizes[0]} and {sizes[1]} examples',
            }
        )
    return cases


def check_grad_accumulation(fn):
    """Check a student's gradient accumulation on k = 1..5 devices.

    ``fn(X, y, device_params, devices, lr, accumulate=m)`` cuts the
    batch into ``m`` contiguous micro-batches (sizes differing by at
    most one), adds up their gradients on every device, then takes one
    data-parallel SGD step: the replicas must equal one SGD step on the
    whole batch on one device (as
    ``d2lpar.grading.reference.train_batch_accumulate`` does).

    Parameters
    ----------
    fn : callable
        The student's ``train_batch_accumulate``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> from d2lpar.grading import reference
    >>> bool(dp.check_grad_accumulation(reference.train_batch_accumulate))
    True
    """
    return run_cases(
        'check_grad_accumulation',
        fn,
        accumulation_cases(),
        lambda f, c: _train_case(f, c, c['m']),
    )
