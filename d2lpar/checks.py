"""Argument checks shared by the public functions.

Every public function of ``d2lpar`` validates what a student passes in and
fails early with a message that names the function, says what was wrong and
what to do, instead of letting MXNet fail later with a C++ backtrace.
What holds in either framework (numbers, labels, shard layouts) is
:mod:`d2lpar.validation`'s, shared with the PyTorch twin's checks
(:mod:`d2lpar.torch.checks`).
"""

import mxnet as mx
import numpy as onp
from mxnet import np

from . import validation
from .validation import check_positive, gpu_count

__all__ = [
    'check_batch',
    'check_device',
    'check_devices',
    'check_gpu',
    'check_positive',
    'check_replicas',
    'check_returned_none',
    'check_split',
    'check_step',
]


def check_devices(devices, where):
    """Raise unless ``devices`` is a non-empty list of distinct contexts.

    Parameters
    ----------
    devices : sequence of mxnet.Context
        The devices a caller wants to use.
    where : str
        The public function doing the check, for the message.

    Raises
    ------
    TypeError
        If ``devices`` is not a list/tuple of ``mx.Context`` (a string
        such as ``'cpu(0)'`` or an int is refused: ``0`` could mean
        ``cpu(0)`` or ``gpu(0)``).
    ValueError
        If it is empty, names the same device twice, or names a GPU that
        this MXNet cannot use.
    """
    if not isinstance(devices, (list, tuple)):
        raise TypeError(
            f'{where}: devices must be a list of mx.Context, '
            f'got {type(devices).__name__} {devices!r}; pass '
            f'contexts such as [npx.cpu(0), npx.cpu(1)] or '
            f'use d2lpar.devices(n)'
        )
    if not devices:
        raise ValueError(
            f'{where}: the device list is empty; pass at '
            f'least one, e.g. d2lpar.devices(1)'
        )
    for i, device in enumerate(devices):
        if not isinstance(device, mx.Context):
            raise TypeError(
                f'{where}: devices[{i}] is the '
                f'{type(device).__name__} {device!r}, not an '
                f'mx.Context; pass contexts such as '
                f'npx.cpu(0) or npx.gpu(0), or use '
                f'd2lpar.devices(n)'
            )
        if device.device_type == 'gpu':
            check_gpu(device, where)
    if len(set(devices)) != len(devices):
        # Two shards on one context would silently do the work of one
        # device twice over: the very bug of d2l's try_gpu fallback.
        raise ValueError(
            f'{where}: devices {list(devices)} name the same '
            f'context twice; pass distinct contexts, e.g. '
            f'd2lpar.devices(2)'
        )


def check_gpu(device, where):
    """Raise unless MXNet can run on the GPU context ``device``.

    Without this check a CPU-only MXNet fails at the first operator with
    a C++ backtrace.

    Raises
    ------
    ValueError
        If this MXNet was built without CUDA, or sees fewer GPUs.
    """
    if not mx.runtime.Features().is_enabled('CUDA'):
        raise ValueError(
            f'{where}: {device} asked for, but this MXNet has '
            f'no GPU support (it is the CPU build); install '
            f'mxnet-cuXXX matching your CUDA (see README) or '
            f'use dp.devices(), which falls back to CPU '
            f'contexts'
        )
    num_gpus = mx.context.num_gpus()
    if device.device_id >= num_gpus:
        raise ValueError(
            f'{where}: {device} asked for, but MXNet sees '
            f'{gpu_count(num_gpus)}; use dp.devices() to get the '
            f'ones that exist'
        )


def check_device(device, where):
    """Raise unless ``device`` is one context this MXNet can use.

    For the public functions that take a single device (``get_params``,
    ``evaluate_accuracy``, ...): a ``gpu(0)`` on the CPU build otherwise
    fails at the first operator with a raw ``MXNetError``.

    Raises
    ------
    TypeError
        If ``device`` is not an ``mx.Context``.
    ValueError
        If it is a GPU this MXNet cannot use (see :func:`check_gpu`).
    """
    if not isinstance(device, mx.Context):
        raise TypeError(
            f'{where}: device must be an mx.Context such as '
            f'npx.cpu(0), got {type(device).__name__} {device!r}; '
            f'use d2lpar.devices(n)[i]'
        )
    if device.device_type == 'gpu':
        check_gpu(device, where)


def check_batch(X, y, where, classes=None, dtype='float32'):
    """Raise unless ``X, y`` is a minibatch MXNet can train on; return it
    with integral float labels cast to int32.

    Reading the labels costs one host copy of ``n`` numbers and waits
    only for the operations that write ``y`` (none for a batch from a
    DataLoader), not for the devices' steps in flight.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        Features ``(n, ...)`` and class labels ``(n,)``: integers, or
        floats holding whole numbers (MXNet's default dtype is float32,
        so ``mxnet.np.array([3, 1, 4])`` is float32).
    where : str
        The public function doing the check, for the message.
    classes : int, optional
        The number of classes (labels must lie in ``0 .. classes-1``);
        None checks only that labels are not negative.
    dtype : str, optional
        The dtype ``X`` must have (the parameters' dtype).

    Returns
    -------
    X, y : mxnet.numpy.ndarray
        ``y`` as int32 when it held whole-number floats.

    Raises
    ------
    TypeError
        If ``X`` or ``y`` is not an MXNet array (NumPy, PyTorch, lists),
        or ``X`` has another dtype than the parameters.
    ValueError
        If ``y`` is not one label per example (shape ``(n, 1)``,
        one-hot labels), or a label is not a class index.
    """
    for name, value in (('X', X), ('y', y)):
        if not isinstance(value, np.ndarray):
            cast = dtype if name == 'X' else 'int32'
            raise TypeError(
                f'{where}: {name} is a {validation.describe(value)}, not '
                f'an mxnet.numpy.ndarray; convert with '
                f'mxnet.np.array({name}, dtype="{cast}") (for a torch '
                f'tensor: mxnet.np.array({name}.numpy(), '
                f'dtype="{cast}"))'
            )
    if X.dtype != onp.dtype(dtype):
        scale = (
            validation.PIXEL_SCALE
            if onp.issubdtype(X.dtype, onp.integer)
            else ''
        )
        raise TypeError(
            f'{where}: X has dtype {onp.dtype(X.dtype).name}, but the '
            f'parameters are {dtype}; convert with '
            f'X.astype("{dtype}"){scale}'
        )
    validation.check_label_shape(
        y.shape, X.shape[0], where, 'y.argmax(axis=1).astype("int32")'
    )
    labels = y.asnumpy()  # host copy; waits only for y's own writers
    validation.check_labels(labels, classes, where)
    if onp.issubdtype(labels.dtype, onp.floating):
        y = y.astype('int32')
    return X, y


def check_replicas(device_params, devices, where):
    """Raise unless ``device_params[i]`` lives on ``devices[i]``, with
    gradient buffers attached.

    Raises
    ------
    ValueError
        If the counts differ, or a replica is on another device.
    TypeError
        If a parameter is not an MXNet array.
    RuntimeError
        If a parameter has no gradient buffer.
    """
    validation.check_replica_count(device_params, devices, where)
    for i, (params, device) in enumerate(zip(device_params, devices)):
        for j, p in enumerate(params):
            if not isinstance(p, np.ndarray):
                raise TypeError(
                    f'{where}: device_params[{i}][{j}] is a '
                    f'{validation.describe(p)}; convert with '
                    f'mxnet.np.array, then use dp.get_params'
                )
            if p.ctx != device:
                raise ValueError(
                    f'{where}: device_params[{i}][{j}] lives '
                    f'on {p.ctx}, but devices[{i}] is '
                    f'{device}; build the replicas in the '
                    f'order of devices with '
                    f'dp.get_params(params, devices[{i}])'
                )
            if p.grad is None:
                raise RuntimeError(
                    f'{where}: device_params[{i}][{j}] has '
                    f'no gradient buffer; call '
                    f'p.attach_grad() on every parameter, '
                    f'or use dp.get_params(params, device), '
                    f'which does it'
                )


CONTRACT = (
    'the allreduce contract in help(d2lpar.allreduce): '
    'algorithm(data) sums in place and returns None'
)


def check_returned_none(returned, algorithm, where):
    """Raise if an allreduce returned a value instead of writing in place.

    Raises
    ------
    TypeError
        If ``returned`` is not None: the caller's gradients are
        unchanged, so training would silently not average them.
    """
    validation.check_returned_none(
        returned, algorithm, where, 'array (data[i][:] = total)', CONTRACT
    )


def _classes(params):
    """The output layer's width: the last parameter's length when it is
    a bias (LeNet's), else None (unknown)."""
    if params and params[-1].ndim == 1:
        return params[-1].shape[0]
    return None


def check_step(X, y, device_params, devices, lr, accumulate):
    """Refuse the arguments of :func:`train_batch` a student gets wrong
    first, with a message naming the argument, the value and the fix;
    return ``X, y`` as :func:`check_batch` does (integral float labels
    as int32).

    The number of classes is the length of the last parameter when it
    is a bias (LeNet's output layer); ``X`` must have the parameters'
    dtype.
    """
    check_positive('lr', lr, 'train_batch')
    check_positive('accumulate', accumulate, 'train_batch', integer=True)
    check_devices(devices, 'train_batch')
    check_replicas(device_params, devices, 'train_batch')
    params = device_params[0]
    X, y = check_batch(
        X,
        y,
        'train_batch',
        classes=_classes(params),
        dtype=onp.dtype(params[0].dtype).name if params else 'float32',
    )
    validation.check_enough_examples(
        X.shape[0],
        len(devices),
        "gluon.data.DataLoader(..., last_batch='discard')",
        accumulate,
    )
    return X, y


def check_split(shards, n, devices):
    """Raise unless a ``split=`` function gave one shard per device,
    on that device, covering all ``n`` examples; return the shards."""
    X_shards, y_shards = shards
    where = [x.ctx for x in X_shards] + [t.ctx for t in y_shards]
    validation.check_shard_layout(
        [x.shape[0] for x in X_shards],
        where[: len(X_shards)],
        n,
        devices,
        where == list(devices) * 2,
    )
    return X_shards, y_shards
