"""Local SGD steps, in PyTorch: each device steps on its own shard.

The twin of :func:`d2lpar.local_sgd_step` (:mod:`d2lpar.techniques.
averaging`), which homework 5 compares with gradient averaging.
"""

from .checks import check_split, check_step
from .model import lenet
from .splitting import split_batch
from .training import cross_entropy, sgd

__all__ = ['local_sgd_step']


def local_sgd_step(
    X, y, device_params, devices, lr, net=lenet, loss=cross_entropy
):
    """Each device takes an SGD step on its own shard; no communication.

    Taught in :doc:`/book/local-sgd`. Device ``j`` divides by its own
    shard size: its replica takes the step a single device would take on
    that shard alone.

    Parameters
    ----------
    X, y : torch.Tensor
        The minibatch, split over ``devices``.
    device_params : list of list of torch.Tensor
        Replicas made by :func:`d2lpar.torch.get_params`; changed in
        place.
    devices : list of torch.device
    lr : float
    net, loss : callable, optional

    Returns
    -------
    list of float
        Each device's share of the batch (shard size / batch size): the
        weights that make an average of the replicas equal the
        gradient-averaging step.

    Raises
    ------
    TypeError, ValueError
        For the arguments :func:`d2lpar.torch.train_batch` refuses.
    """
    X, y = check_step(X, y, device_params, devices, lr)
    X_shards, y_shards = check_split(
        split_batch(X, y, devices), X.shape[0], devices
    )
    for X_shard, y_shard, params in zip(X_shards, y_shards, device_params):
        for p in params:  # PyTorch adds to .grad; MXNet writes
            p.grad.zero_()
        loss(net(X_shard, params), y_shard).sum().backward()
        sgd(params, lr, X_shard.shape[0])  # its own shard only
    return [X_shard.shape[0] / X.shape[0] for X_shard in X_shards]
