"""Checks for a student's train_batch and gradient accumulation."""

from ..model import lenet
from ..splitting import micro_batches
from ..training import (
    accumulate_gradients,
    cross_entropy,
    sgd,
    sum_gradients,
)
from .battery import accumulation_cases, train_case, train_cases
from .report import run_cases
from .steps import KIT

__all__ = [
    'accumulation_cases',
    'check_grad_accumulation',
    'check_train_batch',
    'micro_batches',
    'train_batch_accumulate',
    'train_cases',
]


def _train_case(fn, case, accumulate=None):
    return train_case(fn, case, KIT, accumulate)


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
