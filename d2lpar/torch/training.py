"""Data-parallel training from scratch in PyTorch: one step, and train().

The epoch loop is the library's own, framework-neutral
:func:`d2lpar.epochs.run_epochs`, shared with the MXNet trainers.
"""

import torch
import torch.nn.functional as F

from ..epochs import TrainResult, check_train_arguments, run_epochs
from .checks import (
    check_devices,
    check_returned_none,
    check_split,
    check_step,
)
from .collectives import allreduce
from .data import load_fashion_mnist
from .devices import devices as default_devices
from .evaluation import evaluate_accuracy
from .model import get_params, init_lenet_params, lenet
from .splitting import split_batch

# The standard deviation of the initial weights that train() uses, as
# d2lpar.training.INIT_SCALE: with d2l's 0.01 LeNet stays at chance for
# about its first epoch; 0.1 learns in one.
INIT_SCALE = 0.1

__all__ = [
    'INIT_SCALE',
    'TrainResult',
    'cross_entropy',
    'sgd',
    'sum_gradients',
    'train',
    'train_batch',
]


def cross_entropy(logits, y):
    """Per-example softmax cross-entropy, as MXNet's
    ``gluon.loss.SoftmaxCrossEntropyLoss()`` (d2l's chapter uses it)."""
    return F.cross_entropy(logits, y, reduction='none')


@torch.no_grad()
def sgd(params, lr, batch_size):
    """Minibatch SGD in place: ``param -= lr * param.grad / batch_size``
    (d2l's ``sgd``)."""
    for param in params:
        param -= lr * param.grad / batch_size


def train_batch(
    X,
    y,
    device_params,
    devices,
    lr,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
    split=split_batch,
):
    """Take one data-parallel minibatch SGD step on all devices.

    Taught in :doc:`/book/train-batch`. The twin of
    :func:`d2lpar.train_batch`, line for line: each device computes the
    loss gradient of its shard; ``algorithm`` sums the gradients so every
    replica applies the same update, divided by the whole batch size.
    The result equals one SGD step on the whole batch on one device, and
    MXNet's step from the same values on the same batch (to float32
    rounding; ``tests/test_torch_training.py`` compares them).

    Parameters
    ----------
    X, y : torch.Tensor
        The minibatch, on any device: float32 features and class labels
        (integers, or floats holding whole numbers).
    device_params : list of list of torch.Tensor
        ``device_params[i]`` is the replica on ``devices[i]``, made by
        :func:`d2lpar.torch.get_params`.
    devices : list of torch.device
        Distinct devices (on the CPU they take turns: see
        :mod:`d2lpar.torch.devices`).
    lr : float
        Learning rate (positive).
    net : callable, optional
        ``net(X, params) -> logits``.
    loss : callable, optional
        Per-example loss ``loss(logits, y)``.
    algorithm : callable, optional
        The allreduce: any function meeting the contract in
        :func:`d2lpar.torch.allreduce`'s docstring.
    split : callable, optional
        ``split(X, y, devices) -> (X_shards, y_shards)``.

    Returns
    -------
    losses, corrects : list of torch.Tensor
        Per device, the summed loss and the number of correct
        predictions (0-d tensors; ``.item()`` reads them).

    Raises
    ------
    TypeError, ValueError, RuntimeError
        For a non-positive ``lr``, tensors that are not PyTorch's, labels
        that are not class indices, replicas that do not match
        ``devices`` or do not require gradients, a batch too small to
        split, or an ``algorithm`` that returns a value instead of
        summing in place.
    """
    X, y = check_step(X, y, device_params, devices, lr)
    X_shards, y_shards = check_split(split(X, y, devices), X.shape[0], devices)
    for params in device_params:  # PyTorch adds to .grad; MXNet writes
        for p in params:
            p.grad.zero_()
    # The loss is computed separately on each device
    outs = [
        net(X_shard, params)
        for X_shard, params in zip(X_shards, device_params)
    ]
    ls = [loss(out, y_shard).sum() for out, y_shard in zip(outs, y_shards)]
    for l in ls:  # backpropagation is performed separately on each device
        l.backward()
    # Sum all gradients from each device and broadcast them to all devices
    sum_gradients(device_params, algorithm)
    # Divide by the whole batch size: the step equals the 1-device step
    for params in device_params:
        sgd(params, lr, X.shape[0])
    return [l.detach() for l in ls], count_correct(outs, y_shards)


def sum_gradients(device_params, algorithm=allreduce):
    """Allreduce every parameter's gradient across the replicas (one
    ``algorithm`` call per parameter). Raises TypeError if ``algorithm``
    returns a value instead of writing the sum into every tensor."""
    for i in range(len(device_params[0])):
        returned = algorithm([params[i].grad for params in device_params])
        check_returned_none(returned, algorithm, 'train_batch')


@torch.no_grad()
def count_correct(outs, y_shards):
    """Per shard, how many argmax predictions equal the labels."""
    return [(out.argmax(dim=1) == y).sum() for out, y in zip(outs, y_shards)]


def wait_for(devices):
    """A function that returns when the ``devices``' queued work is done
    (CUDA runs asynchronously; the CPU has nothing queued)."""

    def wait():
        for device in devices:
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            elif device.type == 'mps':
                torch.mps.synchronize()

    return wait


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
):
    """Train LeNet on Fashion-MNIST with data parallelism.

    Taught in :doc:`/book/training`. The twin of :func:`d2lpar.train`
    (without its later chapters' ``accumulate`` and ``bucket``): every
    step is :func:`train_batch`; after each epoch the test accuracy is
    computed on the first device. The same seed gives the same initial
    values as MXNet's.

    Parameters
    ----------
    num_gpus : int, optional
        How many devices, via :func:`d2lpar.torch.devices`. Ignored
        when ``devices`` is given.
    batch_size : int, optional
        Minibatch size summed over all devices. Ignored when ``data`` is
        given.
    lr : float, optional
    num_epochs : int, optional
    devices : list of torch.device, optional
    data : (train_iter, test_iter), optional
        Iterators to use instead of :func:`load_fashion_mnist`.
    plot : bool, optional
        Draw the curves into ``result.figure``.
    verbose : bool, optional
        Print a line per epoch.
    seed : int, optional
        Seed of the initial parameters.
    init_scale : float, optional
        Standard deviation of the initial weights.
    algorithm : callable, optional
        The allreduce used by every step, as for :func:`train_batch`.
    split : callable, optional
        How each minibatch is split over the devices, as for
        :func:`train_batch`.

    Returns
    -------
    d2lpar.epochs.TrainResult
        Per-epoch train loss, train accuracy, test accuracy and seconds.

    Raises
    ------
    TypeError, ValueError
        For a non-positive ``num_gpus``, ``batch_size``, ``lr`` or
        ``num_epochs``, or a bad device list; see also
        :func:`train_batch`.
    """
    check_train_arguments(num_gpus, batch_size, num_epochs, lr, init_scale)
    if devices is None:
        devices = default_devices(num_gpus)
    check_devices(devices, 'train')
    train_iter, test_iter = data or load_fashion_mnist(batch_size)
    params = init_lenet_params(seed, init_scale)
    device_params = [get_params(params, d) for d in devices]

    def step(X, y):
        return train_batch(
            X, y, device_params, devices, lr, algorithm=algorithm, split=split
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
        wait=wait_for(devices),
    )
