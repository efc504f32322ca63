"""Measuring accuracy in PyTorch."""

import torch

from .checks import check_device, check_devices
from .model import lenet
from .splitting import split_batch


@torch.no_grad()
def evaluate_accuracy(params, data_iter, device, net=lenet):
    """Fraction of correctly classified examples of ``data_iter``.

    Taught in :doc:`/book/training`. The twin of
    :func:`d2lpar.evaluate_accuracy`.

    Parameters
    ----------
    params : list of torch.Tensor
        Parameters living on ``device``.
    data_iter : iterable of (X, y)
        Minibatches, on any device.
    device : torch.device
        Where to compute.
    net : callable, optional
        ``net(X, params) -> logits``.

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    ValueError
        If ``data_iter`` yields no example.
    """
    check_device(device, 'evaluate_accuracy')
    correct, examples = 0, 0
    for X, y in data_iter:
        X, y = X.to(device), y.to(device)
        correct += (net(X, params).argmax(dim=1) == y).sum().item()
        examples += y.numel()
    if examples == 0:
        raise ValueError(
            'evaluate_accuracy: data_iter yielded no examples; check the '
            'dataset is not empty'
        )
    return correct / examples


@torch.no_grad()
def evaluate_accuracy_sharded(device_params, data_iter, devices, net=lenet):
    """Accuracy with every batch split over all devices.

    Taught in :doc:`/book/exercises`. The twin of
    :func:`d2lpar.evaluate_accuracy_sharded`: the same count of correct
    predictions as :func:`evaluate_accuracy`, each device scoring its own
    shard with its own replica.

    Parameters
    ----------
    device_params : list of list of torch.Tensor
        ``device_params[i]`` lives on ``devices[i]``.
    data_iter : iterable of (X, y)
        Minibatches with at least ``len(devices)`` examples each.
    devices : list of torch.device
        Distinct devices.
    net : callable, optional
        ``net(X, params) -> logits``.

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    ValueError
        If ``data_iter`` yields no example, or a batch is smaller than
        the number of devices.
    """
    check_devices(devices, 'evaluate_accuracy_sharded')
    correct, examples = 0, 0
    for X, y in data_iter:
        X_shards, y_shards = split_batch(X, y, devices)
        # Every device's count stays on its device until all are queued
        # (on GPUs they then compute at the same time); .item() waits.
        counts = [
            (net(X_shard, params).argmax(dim=1) == y_shard).sum()
            for X_shard, y_shard, params in zip(
                X_shards, y_shards, device_params
            )
        ]
        correct += sum(c.item() for c in counts)
        examples += y.numel()
    if examples == 0:
        raise ValueError(
            'evaluate_accuracy_sharded: data_iter yielded no examples; '
            'check the dataset is not empty'
        )
    return correct / examples
