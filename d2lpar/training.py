"""Data-parallel training from scratch: one step, and train().

The epoch loop itself is :func:`d2lpar.epochs.run_epochs`, shared with
the concise (Gluon) trainer.
"""

import functools
import inspect

from mxnet import Context, autograd, gluon

from . import _d2l as d2l  # not d2l: it pins numpy 1.23.5 (_d2l.py)
from .checks import (
    check_devices,
    check_returned_none,
    check_split,
    check_step,
)
from .collectives import allreduce
from .comm.buckets import bucketed_allreduce
from .data import load_fashion_mnist
from .devices import devices as default_devices
from .epochs import TrainResult, check_train_arguments, run_epochs
from .evaluation import evaluate_accuracy
from .model import init_lenet_params, lenet
from .parameters import get_params
from .splitting import micro_batches, split_batch
from .threads import thread_budget

# Per-example loss; d2l's chapter uses the same.
cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()

# The standard deviation of the initial weights that train() uses: with
# d2l's 0.01 the gradients through LeNet's four small layers are so tiny
# that the first epoch stays at chance; 0.1 learns in one epoch.
INIT_SCALE = 0.1


def cores_per_device(step):
    """Decorate a training step: its devices share the cores first.

    Before the step runs, :func:`d2lpar.thread_budget` gives the CPU
    devices of its ``devices`` argument their share of the machine's
    cores (one device every core, k devices ``max(1, cores // k)`` each;
    :doc:`/book/machine-limit` explains why). Cheap when nothing changes, so
    every step of the library wears it and a loop written by hand needs
    no thread setting of its own; the step's body says nothing of
    threads. Arguments the step will refuse (not a list of distinct
    devices) are left to its own checks.
    """
    signature = inspect.signature(step)

    @functools.wraps(step)
    def run(*args, **kwargs):
        try:
            devices = signature.bind(*args, **kwargs).arguments['devices']
        except (TypeError, KeyError):
            devices = None  # the call itself raises the TypeError
        if (
            isinstance(devices, (list, tuple))
            and all(isinstance(d, Context) for d in devices)
            and len(set(devices)) == len(devices)
        ):
            thread_budget(devices)
        return step(*args, **kwargs)

    return run


@cores_per_device
def train_batch(
    X,
    y,
    device_params,
    devices,
    lr,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
    bucket=False,
    split=split_batch,
    accumulate=1,
):
    """Take one data-parallel minibatch SGD step on all devices.

    Taught in :doc:`/book/train-batch`. Each device computes the loss
    gradient of its shard; ``algorithm`` sums the gradients so every
    replica applies the same update. The result equals one SGD step on
    the whole batch on a single device.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch, on any device: features and integer labels.
    device_params : list of list of mxnet.numpy.ndarray
        ``device_params[i]`` is the replica on ``devices[i]``, with
        gradients attached (see :func:`get_params`).
    devices : list of mxnet.Context
        Distinct devices.
    lr : float
        Learning rate (positive).
    net : callable, optional
        ``net(X, params) -> logits``.
    loss : callable, optional
        Per-example loss ``loss(logits, y)``.
    algorithm : callable, optional
        The allreduce, e.g. :func:`d2lpar.ring_allreduce`; any function
        meeting the contract in :func:`d2lpar.allreduce`'s docstring.
    bucket : bool, optional
        Pack all gradients into one buffer per device and reduce it once
        (:func:`d2lpar.bucketed_allreduce`) instead of one call per
        parameter.
    split : callable, optional
        ``split(X, y, devices) -> (X_shards, y_shards)``, shard ``i`` on
        ``devices[i]`` (default :func:`d2lpar.split_batch`).
    accumulate : int, optional
        Above 1, hand the step to
        :func:`d2lpar.training.train_micro_batches`: the same
        step computed in ``accumulate`` micro-batches.

    Returns
    -------
    losses, corrects : list of mxnet.numpy.ndarray
        Per device (and micro-batch), the summed loss and the number of
        correct predictions, not yet waited for (call ``.item()``).

    Raises
    ------
    TypeError, ValueError, RuntimeError
        For a non-positive ``lr``, arrays that are not MXNet's, labels
        that are not class indices, replicas that do not match
        ``devices`` or lack gradients, a batch too small to split, or an
        ``algorithm`` that returns a value instead of summing in place.
    """
    if accumulate > 1:  # gradient accumulation, taught in its own chapter
        return train_micro_batches(**locals())  # all arguments, passed on
    # Check the arguments; cast whole-number float labels (MXNet's
    # default dtype) to int32
    X, y = check_step(X, y, device_params, devices, lr, accumulate)
    X_shards, y_shards = check_split(split(X, y, devices), X.shape[0], devices)
    # Each device: its shard's loss and, in its replica's .grad, gradients
    ls, outs = device_gradients(X_shards, y_shards, device_params, net, loss)
    # Sum all gradients from each device and broadcast them to all devices
    sum_gradients(device_params, algorithm, bucket)
    # Divide by the whole batch size: the step equals the 1-device step
    sgd(device_params, lr, X.shape[0])
    return ls, count_correct(outs, y_shards)


def device_gradients(
    X_shards, y_shards, device_params, net=lenet, loss=cross_entropy, *,
    forward=None,
):  # fmt: skip
    """Forward and backward on every device, each on its own shard.

    Every step of the library computes its gradients here. Device ``i``
    runs ``net`` on ``X_shards[i]`` with its replica ``device_params[i]``
    and sums its examples' losses; the backward pass writes the gradient
    of that sum into the ``.grad`` buffers of that replica (overwriting
    what they held).

    Parameters
    ----------
    X_shards, y_shards : list of mxnet.numpy.ndarray
        One shard per device (:func:`d2lpar.split_batch`).
    device_params : list of list of mxnet.numpy.ndarray
        Replicas with gradients attached (:func:`d2lpar.get_params`).
    net, loss : callable, optional
        ``net(X, params) -> logits``; per-example ``loss(logits, y)``.
    forward : callable, optional
        ``forward(X_shards, device_params) -> logits per device``,
        instead of ``net`` on each device alone: for a network whose
        devices exchange values in the forward pass (synchronised
        BatchNorm, :func:`d2lpar.batchnorm.train_batch`).

    Returns
    -------
    losses, outputs : list of mxnet.numpy.ndarray
        Per device, the summed loss and the logits.
    """
    with autograd.record():  # loss is computed separately on each device
        if forward is None:
            outs = [
                net(X_shard, params)
                for X_shard, params in zip(X_shards, device_params)
            ]
        else:
            outs = forward(X_shards, device_params)
        ls = [loss(out, y_shard).sum() for out, y_shard in zip(outs, y_shards)]
    # One backward pass over every device's loss: each writes its own
    # replica's gradients (and, where devices exchanged values, sends the
    # gradients back across devices too)
    autograd.backward(ls)
    return ls, outs


def sum_gradients(device_params, algorithm=allreduce, bucket=False):
    """Allreduce every parameter's gradient across the replicas.

    One ``algorithm`` call per parameter, or with ``bucket`` one call
    over all gradients packed together
    (:func:`d2lpar.bucketed_allreduce`).
    Raises TypeError if ``algorithm`` returns a value instead of writing
    the sum into every array.
    """
    grads = [[p.grad for p in params] for params in device_params]
    if bucket:
        bucketed_allreduce(grads, algorithm)
        return
    for i in range(len(grads[0])):
        returned = algorithm([g[i] for g in grads])
        check_returned_none(returned, algorithm, 'train_batch')


def sgd(device_params, lr, batch_size):
    """Update every replica in place: ``p -= lr * p.grad / batch_size``.

    d2l's minibatch SGD (``d2l.sgd``) on each replica; with the summed
    gradients of the whole batch and its size, every replica takes the
    one-device step.
    """
    for params in device_params:
        d2l.sgd(params, lr, batch_size)


@cores_per_device
def train_micro_batches(
    X,
    y,
    device_params,
    devices,
    lr,
    accumulate,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
    bucket=False,
    split=split_batch,
):
    """:func:`d2lpar.train_batch`'s step, computed in ``accumulate`` parts.

    Taught in :doc:`/book/accumulation`. The batch is cut into
    ``accumulate`` contiguous micro-batches (:func:`micro_batches`);
    :func:`accumulate_gradients` adds their gradients up on each device,
    then one allreduce and one update follow: the same step as
    :func:`d2lpar.train_batch`, with the activations of one micro-batch
    in memory at a time. Arguments and returns as for
    :func:`d2lpar.train_batch`.
    """
    X, y = check_step(X, y, device_params, devices, lr, accumulate)
    losses, corrects = accumulate_gradients(
        micro_batches(X, y, accumulate), device_params, devices, net, loss,
        split=split,
    )  # fmt: skip
    sum_gradients(device_params, algorithm, bucket)
    sgd(device_params, lr, X.shape[0])
    return losses, corrects


def accumulate_gradients(
    batches, device_params, devices, net=lenet, loss=cross_entropy, *,
    split=split_batch, reduce=None,
):  # fmt: skip
    """Gradients of several batches, added up on each device.

    Taught in :doc:`/book/accumulation`, and the one place the
    library accumulates (:func:`d2lpar.training.train_micro_batches`,
    :func:`d2lpar.accumulation.train_batch`). Each batch in turn is split
    over ``devices`` and goes through :func:`device_gradients`; since
    backward overwrites ``.grad``, each device adds the new gradients to
    a running sum of its own, which ends in the ``.grad`` buffers.

    Parameters
    ----------
    batches : iterable of (X, y)
        The batches (or micro-batches) of one step.
    device_params, devices, net, loss, split
        As for :func:`d2lpar.train_batch`.
    reduce : callable, optional
        ``reduce(device_params)`` run on every batch's gradients before
        they are added (e.g. an allreduce after every batch, what a
        data-parallel wrapper does outside PyTorch's ``no_sync``).

    Returns
    -------
    losses, corrects : list of mxnet.numpy.ndarray
        Per batch and device, as :func:`d2lpar.train_batch` returns them.
    """
    grads = [[p.grad for p in params] for params in device_params]
    losses, corrects, sums = [], [], None
    for X, y in batches:
        X_shards, y_shards = check_split(
            split(X, y, devices), X.shape[0], devices
        )
        ls, outs = device_gradients(
            X_shards, y_shards, device_params, net, loss
        )
        if reduce is not None:
            reduce(device_params)
        sums = add_gradients(sums, grads)  # backward overwrites .grad
        losses += ls
        corrects += count_correct(outs, y_shards)
    copy_gradients(sums, grads)
    return losses, corrects


def add_gradients(sums, grads):
    """Return ``sums + grads`` per device and parameter (copies at first)."""
    if sums is None:
        return [[g.copy() for g in g_list] for g_list in grads]
    for s_list, g_list in zip(sums, grads):
        for s, g in zip(s_list, g_list):
            s[:] += g
    return sums


def copy_gradients(sums, grads):
    """Write the accumulated ``sums`` into the gradient buffers."""
    for s_list, g_list in zip(sums, grads):
        for s, g in zip(s_list, g_list):
            g[:] = s


def count_correct(outs, y_shards):
    """Per shard, how many argmax predictions equal the labels (lazy)."""
    return [
        (out.argmax(axis=1).astype(y.dtype) == y).sum()
        for out, y in zip(outs, y_shards)
    ]


def train(
    num_gpus=1,
    batch_size=256,
    lr=0.2,
    num_epochs=10,
    *,
    devices=None,
    data=None,
    plot=True,
    verbose=True,
    seed=0,
    init_scale=INIT_SCALE,
    algorithm=allreduce,
    split=split_batch,
    accumulate=1,
    bucket=False,
):
    """Train LeNet on Fashion-MNIST with data parallelism.

    Taught in :doc:`/book/training`. Every step is :func:`train_batch`
    (:func:`d2lpar.training.train_micro_batches` when ``accumulate`` is
    above 1); after each epoch the test accuracy is computed on the first
    device. The steps give the devices their share of the cores
    (:func:`d2lpar.training.cores_per_device`): one device every core, k
    devices ``max(1, cores // k)`` each.

    Parameters
    ----------
    num_gpus : int, optional
        How many devices, via :func:`d2lpar.devices` (CPU contexts when
        there is no GPU). Ignored when ``devices`` is given.
    batch_size : int, optional
        Minibatch size summed over all devices. Ignored when ``data`` is
        given: its iterators fix the batch size, which the result
        reports.
    lr : float, optional
        Learning rate.
    num_epochs : int, optional
        Passes over the training set.
    devices : list of mxnet.Context, optional
        Explicit devices, e.g. ``[npx.cpu(0), npx.cpu(1)]``.
    data : (train_iter, test_iter), optional
        Iterators to use instead of :func:`load_fashion_mnist`.
    plot : bool, optional
        Draw train loss, train accuracy and test accuracy per epoch into
        ``result.figure``; shown live only inside Jupyter.
    verbose : bool, optional
        Print a line per epoch and a summary; False prints nothing.
    seed : int, optional
        Seed of the initial parameters.
    init_scale : float, optional
        Standard deviation of the initial weights (default
        ``INIT_SCALE = 0.1``, which learns in one epoch; d2l's 0.01
        leaves LeNet at chance for about its first epoch).
    algorithm : callable, optional
        The allreduce used by every step (see :func:`train_batch`; the
        contract is in :func:`d2lpar.allreduce`'s docstring).
    split : callable, optional
        How each minibatch is split over the devices (default
        :func:`d2lpar.split_batch`).
    accumulate : int, optional
        Micro-batches per step (gradient accumulation; the step is
        unchanged, each device holds less at a time).
    bucket : bool, optional
        Reduce all gradients as one bucket per device.

    Returns
    -------
    TrainResult
        Per-epoch train loss, train accuracy, test accuracy and seconds,
        the devices, the batch size and the figure.

    Raises
    ------
    TypeError, ValueError
        For a non-positive ``num_gpus``, ``batch_size``, ``lr``,
        ``num_epochs`` or ``accumulate``, or a bad device list; see also
        :func:`train_batch`.

    Examples
    --------
    >>> import d2lpar as dp
    >>> result = dp.train(num_gpus=2, num_epochs=1, plot=False, verbose=False)
    >>> result.train_loss, result.test_acc  # doctest: +SKIP
    """
    check_train_arguments(
        num_gpus, batch_size, num_epochs, lr, init_scale, accumulate
    )
    if devices is None:
        devices = default_devices(num_gpus)
    check_devices(devices, 'train')
    train_iter, test_iter = data or load_fashion_mnist(batch_size)
    params = init_lenet_params(seed, init_scale)
    device_params = [get_params(params, d) for d in devices]

    def step(X, y):
        if accumulate > 1:
            return train_micro_batches(
                X, y, device_params, devices, lr, accumulate,
                algorithm=algorithm, bucket=bucket, split=split,
            )  # fmt: skip
        return train_batch(
            X,
            y,
            device_params,
            devices,
            lr,
            algorithm=algorithm,
            bucket=bucket,
            split=split,
        )

    def evaluate():
        return evaluate_accuracy(device_params[0], test_iter, devices[0])

    result = TrainResult(
        [], [], list(devices), None if data else batch_size, lr
    )
    return run_epochs(
        step,
        train_iter,
        evaluate,
        num_epochs,
        result,
        plot=plot,
        verbose=verbose,
    )
