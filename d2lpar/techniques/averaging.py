"""Parameter averaging and local SGD (periodic averaging).

Instead of summing gradients before every update, each device can update
its own replica with its own shard's gradient and the devices can then
average their *parameters*. After one local SGD step, averaging the
parameters (weighted by shard size) is exactly the gradient-averaging
step. Averaging only every ``H`` steps (local SGD) communicates ``H``
times less, and lets the replicas drift apart in between.
"""

import dataclasses

from mxnet import npx

from ..checks import check_devices, check_positive
from ..comm.algorithms import ring_allreduce
from ..comm.schedules import ring_schedule, traffic
from ..evaluation import evaluate_accuracy
from ..model import init_lenet_params, lenet
from ..parameters import get_params
from ..splitting import split_batch
from ..training import (
    cores_per_device,
    cross_entropy,
    device_gradients,
    sgd,
)


def average_params(device_params, weights=None, algorithm=ring_allreduce):
    """Replace every replica by the (weighted) average of all replicas.

    Taught in :doc:`/book/local-sgd`. Each replica is scaled by its
    weight, then ``algorithm`` sums them, so it moves exactly the bytes
    of one gradient allreduce.

    Parameters
    ----------
    device_params : list of list of mxnet.numpy.ndarray
        ``device_params[i]`` is the replica on device ``i``; changed in
        place.
    weights : list of float, optional
        One per device, summing to 1 (default: ``1/k`` each). Weights
        proportional to shard sizes make one local step plus averaging
        equal the gradient-averaging step.
    algorithm : callable, optional
        The allreduce (a ring by default: every replica then holds the
        same bits).

    Raises
    ------
    ValueError
        If there is not one weight per replica or they do not sum to 1.
    """
    k = len(device_params)
    weights = [1 / k] * k if weights is None else list(weights)
    if len(weights) != k or abs(sum(weights) - 1) > 1e-6:
        raise ValueError(
            f'average_params: need {k} weights summing to 1, '
            f'got {weights}; pass shard sizes divided by the '
            f'batch size, or None for equal weights'
        )
    for params, w in zip(device_params, weights):
        for p in params:
            p[:] = p * w
    for i in range(len(device_params[0])):
        algorithm([params[i] for params in device_params])


@cores_per_device
def local_sgd_step(
    X, y, device_params, devices, lr, net=lenet, loss=cross_entropy
):
    """Each device takes an SGD step on its own shard; no communication.

    Taught in :doc:`/book/local-sgd`. Device ``j`` divides by its own
    shard size: its replica takes the step a single device would take on
    that shard alone.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch, split over ``devices``.
    device_params : list of list of mxnet.numpy.ndarray
        Replicas with gradients attached; changed in place.
    devices : list of mxnet.Context
    lr : float
    net, loss : callable, optional

    Returns
    -------
    list of float
        Each device's share of the batch (shard size / batch size): the
        weights that make :func:`average_params` equal gradient
        averaging.
    """
    X_shards, y_shards = split_batch(X, y, devices)
    device_gradients(X_shards, y_shards, device_params, net, loss)
    for params, X_shard in zip(device_params, X_shards):
        sgd([params], lr, X_shard.shape[0])  # no sum: its own shard only
    return [X_shard.shape[0] / X.shape[0] for X_shard in X_shards]


@dataclasses.dataclass
class LocalSGDResult:
    """What :func:`train_local_sgd` measured.

    Attributes
    ----------
    test_acc : float
        Test accuracy of the averaged model at the end.
    steps, syncs : int
        Local steps taken; parameter averages done (the last one included).
    bytes_sent : int
        Bytes the busiest device sent for all averages (ring allreduce).
    drift : list of float
        Largest parameter difference between two replicas just before
        each average.
    params : list of mxnet.numpy.ndarray
        The final (averaged) model, on the first device.
    """

    test_acc: float
    steps: int
    syncs: int
    bytes_sent: int
    drift: list
    params: list = dataclasses.field(default_factory=list, repr=False)


def train_local_sgd(
    H,
    devices,
    data,
    num_epochs=1,
    lr=0.2,
    seed=0,
    init_scale=0.1,
    net=lenet,
    init=init_lenet_params,
):
    """Train a network with local SGD: average the parameters every H
    steps.

    Taught in :doc:`/book/local-sgd`. ``H=1`` is ordinary synchronous
    data parallelism (one local step plus averaging equals the gradient
    step). The model is averaged once more at the end, then evaluated on
    the first device.

    Parameters
    ----------
    H : int
        Local steps between averages (positive).
    devices : list of mxnet.Context
    data : (train_iter, test_iter)
        From :func:`d2lpar.load_fashion_mnist`.
    num_epochs : int, optional
    lr : float, optional
    seed : int, optional
        Seed of the initial parameters.
    init_scale : float, optional
        Standard deviation of the initial weights.
    net : callable, optional
        ``net(X, params) -> logits`` (LeNet by default).
    init : callable, optional
        ``init(seed, scale) -> params``, matching ``net``.

    Returns
    -------
    LocalSGDResult
    """
    check_positive('H', H, 'train_local_sgd', integer=True)
    check_devices(devices, 'train_local_sgd')
    train_iter, test_iter = data
    start = init(seed, init_scale)
    device_params = [get_params(start, d) for d in devices]
    k, n = len(devices), sum(p.size for p in start)
    per_sync = max(traffic(ring_schedule(k), k, n)[0])
    steps, drift = 0, []

    def sync(weights):
        drift.append(
            max(
                (
                    abs(p - q.as_in_ctx(p.ctx)).max().item()
                    for replica in device_params[1:]
                    for p, q in zip(device_params[0], replica)
                ),
                default=0.0,  # one device: nothing to drift from
            )
        )
        average_params(device_params, weights)

    for _ in range(num_epochs):
        for X, y in train_iter:
            weights = local_sgd_step(X, y, device_params, devices, lr, net=net)
            steps += 1
            if steps % H == 0:
                sync(weights)
            npx.waitall()
    if steps % H:
        sync(None)  # the final model is the average
    acc = evaluate_accuracy(device_params[0], test_iter, devices[0], net)
    return LocalSGDResult(
        acc, steps, len(drift), len(drift) * per_sync, drift, device_params[0]
    )
