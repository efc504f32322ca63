"""The concise version: LeNet as a Gluon block, trained by gluon.Trainer.

The same network and the same update as the from-scratch chapters, with
Gluon doing the bookkeeping: parameters live on every device
(``initialize(ctx=devices)``), and the Trainer's kvstore sums the
gradients across devices before the SGD step.
"""

from mxnet import gluon
from mxnet.gluon import nn

from ..checks import check_devices, check_positive
from ..epochs import TrainResult, run_epochs
from ..evaluation import evaluate_accuracy_sharded
from ..model import init_lenet_params
from ..splitting import split_batch
from ..training import (
    INIT_SCALE,
    cores_per_device,
    count_correct,
    cross_entropy,
    device_gradients,
)


def gluon_lenet():
    """The LeNet of :func:`d2lpar.lenet` as a Gluon ``HybridSequential``.

    Input sizes are given, so the parameters exist as soon as the block
    is initialised (no deferred shape inference).

    Returns
    -------
    mxnet.gluon.nn.HybridSequential
    """
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(20, 3, in_channels=1, activation='relu'),
        nn.AvgPool2D(2, 2),
        nn.Conv2D(50, 5, in_channels=20, activation='relu'),
        nn.AvgPool2D(2, 2),
        nn.Dense(128, in_units=800, activation='relu'),
        nn.Dense(10, in_units=128),
    )
    return net


def set_lenet_params(net, params, devices):
    """Initialise ``net`` on ``devices`` with the from-scratch values.

    Parameters
    ----------
    net : mxnet.gluon.Block
        From :func:`gluon_lenet`.
    params : list of 8 mxnet.numpy.ndarray
        From :func:`d2lpar.init_lenet_params`.
    devices : list of mxnet.Context

    Returns
    -------
    mxnet.gluon.Block
        ``net``, with a copy of every value on every device.
    """
    check_devices(devices, 'set_lenet_params')
    net.initialize(ctx=devices, force_reinit=True)
    gluon_params = list(net.collect_params().values())
    for p, value in zip(gluon_params, params):
        # Dense stores (out, in); the from-scratch matrices are (in, out).
        p.set_data(value.T if value.ndim == 2 else value)
    return net


@cores_per_device
def train_batch(X, y, net, trainer, devices, loss=cross_entropy):
    """One data-parallel step with Gluon: shards, backward, trainer.step.

    Taught in :doc:`/book/concise`. ``trainer.step(batch_size)`` sums the
    gradients of all devices through its kvstore and applies
    ``lr / batch_size`` times that sum: the step of
    :func:`d2lpar.train_batch`.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch.
    net : mxnet.gluon.Block
        Initialised on ``devices``.
    trainer : mxnet.gluon.Trainer
    devices : list of mxnet.Context
    loss : callable, optional

    Returns
    -------
    losses, corrects : list of mxnet.numpy.ndarray
        Per device, the summed loss and the number of correct
        predictions (as :func:`d2lpar.train_batch` returns them).
    """
    X_shards, y_shards = split_batch(X, y, devices)
    # The block holds a replica on every device and picks the one on each
    # shard's device itself: no per-device parameters to pass
    ls, outs = device_gradients(
        X_shards, y_shards, [None] * len(devices), lambda X, _: net(X), loss
    )
    trainer.step(X.shape[0])
    return ls, count_correct(outs, y_shards)


def train_concise(
    devices,
    data,
    lr=0.2,
    num_epochs=10,
    params=None,
    kvstore='device',
    *,
    plot=False,
    verbose=True,
):
    """Train the Gluon LeNet on ``devices``: the loop of :doc:`/book/concise`.

    Parameters
    ----------
    devices : list of mxnet.Context
    data : (train_iter, test_iter)
    lr : float, optional
    num_epochs : int, optional
    params : list of mxnet.numpy.ndarray, optional
        Initial values (default: :func:`d2lpar.init_lenet_params` with
        :data:`d2lpar.training.INIT_SCALE`, as :func:`d2lpar.train`).
    kvstore : str, optional
        The Trainer's kvstore.
    plot : bool, optional
        Draw the curves into ``result.figure``, as :func:`d2lpar.train`.
    verbose : bool, optional
        Print a line per epoch, as :func:`d2lpar.train`.

    Returns
    -------
    TrainResult
        Test accuracy is measured with every test batch split over all
        devices (each scores its shard with its own replica).
    """
    check_positive('lr', lr, 'train_concise')
    check_positive('num_epochs', num_epochs, 'train_concise', True)
    check_devices(devices, 'train_concise')
    net = set_lenet_params(
        gluon_lenet(), params or init_lenet_params(0, INIT_SCALE), devices
    )
    trainer = gluon.Trainer(
        net.collect_params(), 'sgd', {'learning_rate': lr}, kvstore=kvstore
    )
    train_iter, test_iter = data

    def step(X, y):
        return train_batch(X, y, net, trainer, devices)

    def evaluate():
        # The block picks the replica on each shard's device itself, so
        # the per-device params argument is unused here.
        return evaluate_accuracy_sharded(
            [None] * len(devices), test_iter, devices, net=lambda X, _: net(X)
        )

    result = TrainResult([], [], list(devices), None, lr)
    return run_epochs(
        step,
        train_iter,
        evaluate,
        num_epochs,
        result,
        plot=plot,
        verbose=verbose,
        where='train_concise',
    )
