"""A small network with BatchNorm, and BatchNorm statistics across devices.

BatchNorm normalises each feature with the mean and variance of the
*batch*. Split over ``k`` devices, each device sees only its shard: with
*local* BatchNorm it normalises with its shard's statistics, so the step
is no longer the one-device step on the whole batch, and each replica's
running statistics (a state kept for evaluation, not a parameter) follow
its own shards and drift apart. *Synchronised* BatchNorm sums the
per-feature sums and sums of squares over the devices before
normalising: the whole batch's statistics, on every device.
"""

import numpy as onp
from mxnet import np, npx

from ..evaluation import evaluate_accuracy
from ..model import dense
from ..parameters import get_params
from ..splitting import split_batch
from ..training import (
    cores_per_device,
    cross_entropy,
    device_gradients,
    sgd,
    sum_gradients,
)

# (name, shape) of the parameters, in the order bn_mlp reads them. The
# first layer has no bias: BatchNorm's beta plays that role.
BN_MLP_SHAPES = (
    ('W1', (784, 64)),
    ('gamma', (64,)),
    ('beta', (64,)),
    ('W2', (64, 10)),
    ('b2', (10,)),
)
# The running statistics, one value per hidden feature.
BN_STAT_NAMES = ('running_mean', 'running_var')
EPS = 1e-5


def init_bn_mlp(seed=0, scale=0.1):
    """Parameters and running statistics of a 784-64-10 MLP with BatchNorm.

    Taught in :doc:`/book/replicas-in-sync`. Weights from
    N(0, scale^2), gamma ones, beta and biases zeros; running mean zero,
    running variance one.

    Parameters
    ----------
    seed : int, optional
    scale : float, optional

    Returns
    -------
    params, stats : list of mxnet.numpy.ndarray
        Shapes in ``BN_MLP_SHAPES``; ``[running_mean, running_var]``.
    """
    rng = onp.random.default_rng(seed)
    params = []
    for name, shape in BN_MLP_SHAPES:
        values = (
            rng.normal(0, scale, shape)
            if name.startswith('W')
            else onp.ones(shape)
            if name == 'gamma'
            else onp.zeros(shape)
        )
        params.append(np.array(values, dtype='float32'))
    stats = [np.zeros(64), np.ones(64)]
    return params, stats


def replicate_bn(params, stats, devices):
    """Copy parameters (with gradients) and running stats to each device.

    Parameters
    ----------
    params, stats : list of mxnet.numpy.ndarray
        From :func:`init_bn_mlp`.
    devices : list of mxnet.Context

    Returns
    -------
    device_params, device_stats : list of list of mxnet.numpy.ndarray
        One replica of each per device, in the order of ``devices``.
    """
    device_params = [get_params(params, d) for d in devices]
    device_stats = [[s.copyto(d) for s in stats] for d in devices]
    return device_params, device_stats


def bn_mlp(X, params, moments):
    """Logits of the BatchNorm MLP, normalising with given ``moments``.

    Parameters
    ----------
    X : mxnet.numpy.ndarray, shape (batch, 1, 28, 28)
    params : list of mxnet.numpy.ndarray
        As made by :func:`init_bn_mlp`.
    moments : (mean, var) of mxnet.numpy.ndarray, shape (64,)
        Batch statistics when training, running ones when evaluating.

    Returns
    -------
    mxnet.numpy.ndarray, shape (batch, 10)
    """
    return _head(
        dense(X.reshape(X.shape[0], -1), params[0]),  # (b, 64)
        params,
        moments,
    )


def _head(h, params, moments):
    """Normalise the pre-BN features ``h``, then the output layer."""
    _, gamma, beta, W2, b2 = params
    mean, var = moments
    h = gamma * (h - mean) / np.sqrt(var + EPS) + beta
    return dense(npx.relu(h), W2, b2)  # (batch, 10)


def batch_moments(hs, sync):
    """Per-device (mean, var) of the pre-BN features ``hs[j]``."""
    if not sync:
        # Written out: the gradient of MXNet 1.9's np.var disagrees with
        # both this formula and the sums below (tests compare them).
        return [
            (h.mean(axis=0), ((h - h.mean(axis=0)) ** 2).mean(axis=0))
            for h in hs
        ]
    n = sum(h.shape[0] for h in hs)
    s1 = [h.sum(axis=0) for h in hs]  # (64,) per device
    s2 = [(h * h).sum(axis=0) for h in hs]
    moments = []
    for h in hs:  # every device adds the same terms in the same order
        mean = sum(s.as_in_ctx(h.ctx) for s in s1) / n
        square = sum(s.as_in_ctx(h.ctx) for s in s2) / n
        moments.append((mean, square - mean * mean))
    return moments


@cores_per_device
def train_batch(
    X,
    y,
    device_params,
    device_stats,
    devices,
    lr,
    sync=False,
    momentum=0.9,
    loss=cross_entropy,
):
    """One data-parallel SGD step of the BatchNorm MLP.

    Taught in :doc:`/book/replicas-in-sync`. With ``sync=False`` each
    device normalises with its own shard's statistics (local BatchNorm);
    with ``sync=True`` with the whole batch's (the per-device sums are
    exchanged inside the recorded forward pass, so the backward pass
    sends gradients back across devices too). The gradients are then
    summed as usual and every replica takes the SGD step; each device
    updates its running statistics from the moments it normalised with.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch.
    device_params : list of list of mxnet.numpy.ndarray
        Replicas with gradients attached.
    device_stats : list of list of mxnet.numpy.ndarray
        ``[running_mean, running_var]`` per device; updated in place.
    devices : list of mxnet.Context
    lr : float
    sync : bool, optional
        Synchronised BatchNorm.
    momentum : float, optional
        Weight of the old value in the running statistics.
    loss : callable, optional
    """
    X_shards, y_shards = split_batch(X, y, devices)
    moments = []  # per device, the (mean, var) it normalised with

    def forward(X_shards, device_params):
        hs = [
            dense(X_shard.reshape(X_shard.shape[0], -1), params[0])
            for X_shard, params in zip(X_shards, device_params)
        ]
        moments[:] = batch_moments(hs, sync)
        return [
            _head(h, params, m)
            for h, params, m in zip(hs, device_params, moments)
        ]

    # One backward pass: with sync, the losses share the moments
    device_gradients(
        X_shards, y_shards, device_params, loss=loss, forward=forward
    )
    sum_gradients(device_params)
    sgd(device_params, lr, X.shape[0])
    for stats, (mean, var) in zip(device_stats, moments):
        stats[0][:] = momentum * stats[0] + (1 - momentum) * mean
        stats[1][:] = momentum * stats[1] + (1 - momentum) * var


def evaluate_bn(params, stats, data_iter, device):
    """Test accuracy of one replica, normalising with its running stats.

    Parameters
    ----------
    params, stats : list of mxnet.numpy.ndarray
        One replica's parameters and running statistics, on ``device``.
    data_iter : iterable of (X, y)
    device : mxnet.Context

    Returns
    -------
    float
    """
    return evaluate_accuracy(
        params, data_iter, device, net=lambda X, p: bn_mlp(X, p, stats)
    )
