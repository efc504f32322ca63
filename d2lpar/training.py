"""Data-parallel training from scratch: one step, and train().

The epoch loop itself is :func:`d2lpar.epochs.run_epochs`, shared with
the concise (Gluon) trainer.
"""

from mxnet import autograd, gluon

from . import _d2l as d2l  # not d2l: it pins numpy 1.23.5 (_d2l.py)
from .buckets import bucketed_allreduce
from .checks import (
    check_devices,
    check_positive,
    check_returned_none,
    check_split,
    check_step,
)
from .collectives import allreduce
from .data import load_fashion_mnist
from .devices import devices as default_devices
from .epochs import TrainResult, run_epochs
from .evaluation import evaluate_accuracy
from .model import init_lenet_params, lenet
from .parameters import get_params
from .splitting import shard_ranges, split_batch
from .threads import thread_budget

# Per-example loss; d2l's chapter uses the same.
cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()

# The standard deviation of the initial weights that train() uses: with
# d2l's 0.01 the gradients through LeNet's four small layers are so tiny
# that the first epoch stays at chance; 0.1 learns in one epoch.
INIT_SCALE = 0.1


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
        Above 1, hand the step to :func:`train_micro_batches`: the same
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
    # Checked, and whole-number float labels (MXNet's default dtype) cast
    X, y = check_step(X, y, device_params, devices, lr, accumulate)
    thread_budget(devices)  # how many cores each CPU device may use
    X_shards, y_shards = check_split(split(X, y, devices), X.shape[0], devices)
    with autograd.record():  # loss is computed separately on each device
        outs = [
            net(X_shard, params)
            for X_shard, params in zip(X_shards, device_params)
        ]
        ls = [loss(out, y_shard).sum() for out, y_shard in zip(outs, y_shards)]
    for l in ls:  # backpropagation is performed separately on each device
        l.backward()
    # Sum all gradients from each device and broadcast them to all devices
    sum_gradients(device_params, algorithm, bucket)
    # Divide by the whole batch size: the step equals the 1-device step
    for params in device_params:
        d2l.sgd(params, lr, X.shape[0])
    return ls, count_correct(outs, y_shards)


def sum_gradients(device_params, algorithm=allreduce, bucket=False):
    """Allreduce every parameter's gradient across the replicas.

    One ``algorithm`` call per parameter, or with ``bucket`` one call
    over all gradients packed together (:func:`bucketed_allreduce`).
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
    """:func:`train_batch`'s step, computed in ``accumulate`` parts.

    Taught in :doc:`/book/accumulation`. The batch is cut into
    ``accumulate`` contiguous micro-batches, one after the other; each
    device adds each micro-batch's gradients into a running sum, then
    one allreduce and one update follow: the same step as
    :func:`train_batch`, with the activations of one micro-batch in
    memory at a time. Arguments and returns as for :func:`train_batch`.
    """
    X, y = check_step(X, y, device_params, devices, lr, accumulate)
    thread_budget(devices)  # one device uses every core, k share them
    grads = [[p.grad for p in params] for params in device_params]
    losses, corrects, sums = [], [], None
    for X_micro, y_micro in micro_batches(X, y, accumulate):
        X_shards, y_shards = check_split(
            split(X_micro, y_micro, devices), X_micro.shape[0], devices
        )
        with autograd.record():
            outs = [
                net(X_shard, params)
                for X_shard, params in zip(X_shards, device_params)
            ]
            ls = [
                loss(out, y_shard).sum()
                for out, y_shard in zip(outs, y_shards)
            ]
        for l in ls:
            l.backward()
        sums = add_gradients(sums, grads)  # backward overwrites .grad
        losses += ls
        corrects += count_correct(outs, y_shards)
    copy_gradients(sums, grads)
    sum_gradients(device_params, algorithm, bucket)
    for params in device_params:
        d2l.sgd(params, lr, X.shape[0])
    return losses, corrects


def micro_batches(X, y, m):
    """``m`` contiguous micro-batches of ``X, y`` (sizes differ by 1)."""
    for start, stop in shard_ranges(X.shape[0], m):
        yield X[start:stop], y[start:stop]


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

    Taught in :doc:`/book/training`. Every step
    is :func:`train_batch` (:func:`train_micro_batches` when
    ``accumulate`` is above 1); after each epoch the test accuracy is
    computed on the first device.

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
    >>> result = dp.train(num_gpus=2, num_epochs=1, plot=False)
    >>> result.train_loss, result.test_acc  # doctest: +SKIP
    """
    for name, value in (
        ('num_gpus', num_gpus),
        ('batch_size', batch_size),
        ('num_epochs', num_epochs),
        ('accumulate', accumulate),
    ):
        check_positive(name, value, 'train', integer=True)
    check_positive('lr', lr, 'train')
    check_positive('init_scale', init_scale, 'train')
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
