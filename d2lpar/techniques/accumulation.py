"""Gradient accumulation over separate minibatches, one allreduce.

A device that can hold only ``b`` examples at a time can still take the
step of a larger batch: run forward and backward on ``m`` minibatches
one after the other, add each one's gradients into a running sum that
stays on the device, and only then allreduce the sums and update once.
That is the step on the ``m``-times larger batch, with the activations
of one minibatch in memory and one allreduce instead of ``m``.

:func:`d2lpar.train_batch` does the same when given one large batch and
``accumulate=m``; :func:`train_batch` here takes the ``m`` minibatches as
they come from a data loader, which is what training loops do (PyTorch
DDP calls the ``m - 1`` backward passes without communication
``no_sync``).
"""

import numpy as onp
from mxnet import npx

from ..checks import check_positive
from ..collectives import allreduce
from ..model import dense, lenet, relu
from ..training import (
    accumulate_gradients,
    cores_per_device,
    cross_entropy,
    sgd,
    sum_gradients,
)


@cores_per_device
def train_batch(
    batches,
    device_params,
    devices,
    lr,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
    reduce_every=False,
):
    """One SGD step on several minibatches, accumulated on each device.

    Taught in :doc:`/book/accumulation`. Equals
    :func:`d2lpar.train_batch` on the concatenation of ``batches``: the
    gradients are added up by :func:`d2lpar.training.accumulate_gradients`
    (as ``train_batch(accumulate=m)`` does), then summed over the
    devices once and applied once.

    Parameters
    ----------
    batches : list of (X, y)
        The ``m`` minibatches of this step, each split over ``devices``.
    device_params, devices, lr, net, loss, algorithm
        As for :func:`d2lpar.train_batch`.
    reduce_every : bool, optional
        Allreduce every minibatch's gradients before adding them (what
        a data-parallel wrapper does unless told not to, e.g. outside
        PyTorch's ``no_sync``): the same step, ``m`` times the traffic.

    Returns
    -------
    int
        The examples in the step (the divisor of the update).

    Raises
    ------
    ValueError
        If ``batches`` is empty.
    """
    check_positive('lr', lr, 'accumulation.train_batch')
    if not batches:
        raise ValueError(
            'accumulation.train_batch: batches is empty; pass a list of '
            '(X, y) minibatches, one or more'
        )

    def reduce(device_params):
        sum_gradients(device_params, algorithm)

    accumulate_gradients(
        batches, device_params, devices, net, loss,
        reduce=reduce if reduce_every else None,
    )  # fmt: skip
    if not reduce_every:
        sum_gradients(device_params, algorithm)
    n = sum(X.shape[0] for X, _ in batches)
    sgd(device_params, lr, n)
    return n


class CountingAllreduce:
    """Wrap an allreduce; count its calls and the bytes it reduces.

    Taught in :doc:`/book/accumulation`.

    Parameters
    ----------
    algorithm : callable, optional
        The allreduce to run (default :func:`d2lpar.allreduce`).

    Attributes
    ----------
    calls : int
        Times called.
    nbytes : int
        Bytes of one device's arrays, summed over the calls: the payload
        every device contributes (what a schedule then moves depends on
        the algorithm; see :doc:`/book/allreduce-algorithms`).
    """

    def __init__(self, algorithm=allreduce):
        self.algorithm, self.calls, self.nbytes = algorithm, 0, 0

    def __call__(self, arrays):
        self.calls += 1
        self.nbytes += arrays[0].size * onp.dtype(arrays[0].dtype).itemsize
        return self.algorithm(arrays)


def lenet_activations(X, params):
    """The output of every operator of :func:`d2lpar.lenet`, by name.

    Taught in :doc:`/book/accumulation`: these are the arrays
    a forward pass keeps for the backward pass, so their size is what a
    smaller (micro-)batch saves. The same operators as ``lenet``; the
    last output is its logits (a test checks it).

    Parameters
    ----------
    X : mxnet.numpy.ndarray, shape (batch, 1, 28, 28)
    params : list of 8 mxnet.numpy.ndarray

    Returns
    -------
    list of (str, mxnet.numpy.ndarray)
    """
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    conv1 = npx.convolution(
        data=X, weight=W1, bias=b1, kernel=(3, 3), num_filter=20
    )
    out = [('conv1', conv1)]  # (batch, 20, 26, 26)
    out.append(('relu1', relu(out[-1][1])))
    out.append(('pool1', _avg_pool(out[-1][1])))  # (batch, 20, 13, 13)
    conv2 = npx.convolution(
        data=out[-1][1], weight=W2, bias=b2, kernel=(5, 5), num_filter=50
    )
    out.append(('conv2', conv2))  # (batch, 50, 9, 9)
    out.append(('relu2', relu(out[-1][1])))
    out.append(('pool2', _avg_pool(out[-1][1])))
    flat = out[-1][1].reshape(X.shape[0], -1)
    out.append(('dense3', dense(flat, W3, b3)))
    out.append(('relu3', relu(out[-1][1])))
    out.append(('dense4', dense(out[-1][1], W4, b4)))
    return out


def _avg_pool(h):
    return npx.pooling(h, pool_type='avg', kernel=(2, 2), stride=(2, 2))
