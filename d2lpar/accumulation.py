"""Gradient accumulation over separate minibatches, one allreduce.

A device that can hold only ``b`` examples at a time can still take the
step of a larger batch: run forward and backward on ``m`` minibatches
one after the other, add each one's gradients into a running sum that
stays on the device, and only then allreduce the sums and update once.
That is the step on the ``m``-times larger batch, with the activations
of one minibatch in memory and one allreduce instead of ``m``.

:func:`d2lpar.train_batch` does the same when given one large batch and
``accumulate=m``; :func:`accumulate_step` takes the ``m`` minibatches as
they come from a data loader, which is what training loops do (PyTorch
DDP calls the ``m - 1`` backward passes without communication
``no_sync``).
"""

import numpy as onp
from mxnet import npx

from .checks import check_positive, check_returned_none
from .collectives import allreduce
from .model import dense, lenet
from .optim import compute_grads
from .splitting import split_batch
from .threads import thread_budget
from .training import cross_entropy


def accumulate_step(
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
    :func:`d2lpar.train_batch` on the concatenation of ``batches``.

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
    thread_budget(devices)  # cores per device, as train_batch
    check_positive('lr', lr, 'accumulate_step')
    if not batches:
        raise ValueError(
            'accumulate_step: batches is empty; pass a list of (X, y) '
            'minibatches, one or more'
        )
    sums = None  # the running sum, one copy of the gradients per device
    for X, y in batches:
        X_shards, y_shards = split_batch(X, y, devices)
        grads = compute_grads(X_shards, y_shards, device_params, net, loss)
        if reduce_every:
            reduce_all(grads, algorithm)
        if sums is None:
            sums = [[g.copy() for g in gs] for gs in grads]
        else:
            for s_list, g_list in zip(sums, grads):
                for s, g in zip(s_list, g_list):
                    s[:] += g
    if not reduce_every:
        reduce_all(sums, algorithm)
    n = sum(X.shape[0] for X, _ in batches)
    for params, s_list in zip(device_params, sums):
        for p, s in zip(params, s_list):
            p[:] = p - lr * s / n
    return n


def reduce_all(grads, algorithm):
    """Allreduce every parameter's gradients across the devices."""
    for i in range(len(grads[0])):
        returned = algorithm([g[i] for g in grads])
        check_returned_none(returned, algorithm, 'accumulate_step')


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
    out.append(('relu1', npx.relu(out[-1][1])))
    out.append(('pool1', _avg_pool(out[-1][1])))  # (batch, 20, 13, 13)
    conv2 = npx.convolution(
        data=out[-1][1], weight=W2, bias=b2, kernel=(5, 5), num_filter=50
    )
    out.append(('conv2', conv2))  # (batch, 50, 9, 9)
    out.append(('relu2', npx.relu(out[-1][1])))
    out.append(('pool2', _avg_pool(out[-1][1])))
    flat = out[-1][1].reshape(X.shape[0], -1)
    out.append(('dense3', dense(flat, W3, b3)))
    out.append(('relu3', npx.relu(out[-1][1])))
    out.append(('dense4', dense(out[-1][1], W4, b4)))
    return out


def _avg_pool(h):
    return npx.pooling(h, pool_type='avg', kernel=(2, 2), stride=(2, 2))
