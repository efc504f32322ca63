"""Data-parallel training from scratch: one step, evaluation, the loop."""
import dataclasses

from d2l import mxnet as d2l
from mxnet import autograd, gluon, npx

from .buckets import bucketed_allreduce
from .checks import check_devices, check_positive
from .collectives import allreduce
from .data import load_fashion_mnist
from .devices import devices as default_devices
from .evaluation import evaluate_accuracy
from .model import init_lenet_params, lenet
from .parameters import get_params
from .splitting import split_batch

# Per-example loss; d2l's chapter uses the same.
cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()


def _check_replicas(device_params, devices):
    if len(device_params) != len(devices):
        raise ValueError(f'train_batch: {len(device_params)} parameter '
                         f'replicas for {len(devices)} devices; make one '
                         f'per device with get_params(params, device)')
    for i, (params, device) in enumerate(zip(device_params, devices)):
        if params[0].ctx != device:
            raise ValueError(f'train_batch: replica {i} lives on '
                             f'{params[0].ctx}, not on devices[{i}] = '
                             f'{device}; build device_params in the order '
                             f'of devices')


def train_batch(X, y, device_params, devices, lr, net=lenet,
                loss=cross_entropy, algorithm=allreduce, bucket=False):
    """Take one data-parallel minibatch SGD step on all devices.

    Taught in the chapter "train_batch". Each device computes the loss
    gradient of its shard; :func:`allreduce` sums the gradients so every
    replica applies the same update. The result equals one SGD step on
    the whole batch on a single device.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch, on any device; ``len(X) >= len(devices)``.
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
        The allreduce, e.g. :func:`d2lpar.ring_allreduce`.
    bucket : bool, optional
        Pack all gradients into one buffer per device and reduce it once
        (:func:`d2lpar.bucketed_allreduce`) instead of one call per
        parameter.

    Raises
    ------
    ValueError
        If ``lr`` is not positive, replicas and devices do not match, or
        the batch cannot be split (see :func:`split_batch`).
    """
    check_positive('lr', lr, 'train_batch')
    _check_replicas(device_params, devices)
    X_shards, y_shards = split_batch(X, y, devices)
    with autograd.record():  # loss is computed separately on each device
        ls = [loss(net(X_shard, params), y_shard).sum()
              for X_shard, y_shard, params in zip(
                  X_shards, y_shards, device_params)]
    for l in ls:  # backpropagation is performed separately on each device
        l.backward()
    # Sum all gradients from each device and broadcast them to all devices
    grads = [[p.grad for p in params] for params in device_params]
    if bucket:
        bucketed_allreduce(grads, algorithm)
    else:
        for i in range(len(grads[0])):
            algorithm([g[i] for g in grads])
    # Divide by the whole batch size: the step equals the 1-device step
    for params in device_params:
        d2l.sgd(params, lr, X.shape[0])


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` measured.

    Attributes
    ----------
    test_acc : list of float
        Test accuracy after each epoch.
    epoch_seconds : list of float
        Training time of each epoch (finished work only).
    devices : list of mxnet.Context
        The devices that trained.
    batch_size : int or None
        Examples per minibatch, summed over devices (None if unknown).
    lr : float
        Learning rate.
    figure : matplotlib.figure.Figure or None
        The accuracy curve, when plotted.
    """

    test_acc: list
    epoch_seconds: list
    devices: list
    batch_size: int
    lr: float
    figure: object = None

    @property
    def final_test_acc(self):
        """Test accuracy after the last epoch."""
        return self.test_acc[-1]

    @property
    def sec_per_epoch(self):
        """Mean training seconds per epoch (d2l's ``timer.avg()``)."""
        return sum(self.epoch_seconds) / len(self.epoch_seconds)

    def summary(self):
        """The chapter's one-line summary."""
        return (f'test acc: {self.final_test_acc:.2f}, '
                f'{self.sec_per_epoch:.1f} sec/epoch on {self.devices}')


def train(num_gpus=1, batch_size=256, lr=0.2, num_epochs=10, *,
          devices=None, data=None, plot=True, verbose=False, seed=0,
          init_scale=0.01):
    """Train LeNet on Fashion-MNIST with data parallelism.

    Taught in the chapter on training with 1 then 2 devices. After each
    epoch the test accuracy is computed on the first device.

    Parameters
    ----------
    num_gpus : int, optional
        How many devices, via :func:`d2lpar.devices` (CPU contexts when
        there is no GPU). Ignored when ``devices`` is given.
    batch_size : int, optional
        Minibatch size summed over all devices. Ignored when ``data`` is
        given (its iterators fix the batch size).
    lr : float, optional
        Learning rate.
    num_epochs : int, optional
        Passes over the training set.
    devices : list of mxnet.Context, optional
        Explicit devices.
    data : (train_iter, test_iter), optional
        Iterators to use instead of :func:`load_fashion_mnist`.
    plot : bool, optional
        Draw the test-accuracy curve with ``d2l.Animator``.
    verbose : bool, optional
        Print one progress line per epoch.
    seed : int, optional
        Seed of the initial parameters.
    init_scale : float, optional
        Standard deviation of the initial weights. The chapter's 0.01
        leaves LeNet at chance accuracy for about its first epoch (the
        gradients through four tiny layers are tiny); 0.1 learns at once.

    Returns
    -------
    TrainResult
        Per-epoch test accuracy and seconds, and the devices used. Its
        summary line is printed at the end.

    Raises
    ------
    TypeError, ValueError
        For a non-positive ``num_gpus``, ``batch_size``, ``lr`` or
        ``num_epochs``, or a bad device list.
    """
    for name, value in (('num_gpus', num_gpus), ('batch_size', batch_size),
                        ('num_epochs', num_epochs)):
        check_positive(name, value, 'train', integer=True)
    check_positive('lr', lr, 'train')
    if devices is None:
        devices = default_devices(num_gpus)
    check_devices(devices, 'train')
    train_iter, test_iter = data or load_fashion_mnist(batch_size)
    params = init_lenet_params(seed, init_scale)
    device_params = [get_params(params, d) for d in devices]
    animator = (d2l.Animator('epoch', 'test acc', xlim=[1, num_epochs])
                if plot else None)
    result = TrainResult([], [], list(devices), batch_size, lr,
                         animator.fig if plot else None)
    for epoch in range(num_epochs):
        timer = d2l.Timer()
        for X, y in train_iter:
            train_batch(X, y, device_params, devices, lr)
            npx.waitall()  # time finished work only; bounds memory too
        result.epoch_seconds.append(timer.stop())
        result.test_acc.append(evaluate_accuracy(
            device_params[0], test_iter, devices[0]))
        if animator:
            animator.add(epoch + 1, (result.test_acc[-1],))
        if verbose:
            print(f'epoch {epoch + 1}/{num_epochs}: test acc '
                  f'{result.test_acc[-1]:.3f}, '
                  f'{result.epoch_seconds[-1]:.1f} sec', flush=True)
    print(result.summary())
    return result
