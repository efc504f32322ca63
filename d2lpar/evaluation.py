"""Measuring accuracy, on one device or spread over several."""

# d2l pins numpy 1.23.5; its helpers are written out in _d2l.
from . import _d2l as d2l
from .checks import check_device, check_devices
from .model import lenet
from .splitting import split_batch


def evaluate_accuracy(params, data_iter, device, net=lenet):
    """Fraction of correctly classified examples of ``data_iter``.

    Parameters
    ----------
    params : list of mxnet.numpy.ndarray
        Parameters living on ``device``.
    data_iter : iterable of (X, y)
        Minibatches, on any device.
    device : mxnet.Context
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
    metric = d2l.Accumulator(2)  # correct predictions, examples
    for X, y in data_iter:
        X, y = X.as_in_ctx(device), y.as_in_ctx(device)
        metric.add(d2l.accuracy(net(X, params), y), y.size)
    if metric[1] == 0:
        raise ValueError(
            'evaluate_accuracy: data_iter yielded no '
            'examples; check the dataset is not empty'
        )
    return metric[0] / metric[1]


def evaluate_accuracy_sharded(device_params, data_iter, devices, net=lenet):
    """Accuracy with every batch split over all devices.

    Taught in :doc:`/book/exercises`: the same count of correct
    predictions as :func:`evaluate_accuracy`, with each device scoring
    its own shard in parallel.

    Parameters
    ----------
    device_params : list of list of mxnet.numpy.ndarray
        ``device_params[i]`` lives on ``devices[i]``.
    data_iter : iterable of (X, y)
        Minibatches with at least ``len(devices)`` examples each.
    devices : list of mxnet.Context
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
    metric = d2l.Accumulator(2)  # correct predictions, examples
    for X, y in data_iter:
        X_shards, y_shards = split_batch(X, y, devices)
        # Queue every device's work before reading any result back, so
        # the devices compute at the same time.
        correct = [
            (
                net(X_shard, params).argmax(axis=1).astype(y_shard.dtype)
                == y_shard
            ).sum()
            for X_shard, y_shard, params in zip(
                X_shards, y_shards, device_params
            )
        ]
        metric.add(sum(c.item() for c in correct), y.size)
    if metric[1] == 0:
        raise ValueError(
            'evaluate_accuracy_sharded: data_iter yielded no '
            'examples; check the dataset is not empty'
        )
    return metric[0] / metric[1]
