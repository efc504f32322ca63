"""Argument checks of the PyTorch twin: the mistakes named, not a backtrace.

The same checks as :mod:`d2lpar.checks` on PyTorch's types: what a
student passes in is refused early with a message that names the
function, says what was wrong and what to do. What holds in either
framework (numbers, labels, shard layouts) is :mod:`d2lpar.validation`'s,
shared with the MXNet checks.
"""

import torch

from .. import validation
from ..validation import check_positive, describe
from .devices import same_place

__all__ = [
    'check_batch',
    'check_device',
    'check_devices',
    'check_positive',
    'check_replicas',
    'check_returned_none',
    'check_split',
    'check_step',
    'describe',
]


def check_device(device, where):
    """Raise unless ``device`` is a ``torch.device`` this PyTorch can use.

    Raises
    ------
    TypeError
        If ``device`` is not a ``torch.device`` (a string such as
        ``'cuda:0'`` is refused too: pass ``torch.device('cuda:0')``).
    ValueError
        If it is a GPU this PyTorch cannot use (the CPU build, or too
        few GPUs), or Apple's ``mps`` where it is absent.
    """
    if not isinstance(device, torch.device):
        raise TypeError(
            f'{where}: device must be a torch.device such as '
            f"torch.device('cpu'), got {type(device).__name__} "
            f'{device!r}; use d2lpar.torch.devices(n)[i]'
        )
    if device.type == 'cuda':
        count = torch.cuda.device_count()
        index = device.index or 0
        if not torch.cuda.is_available() or index >= count:
            raise ValueError(
                f'{where}: {device} asked for, but this PyTorch sees '
                f'{validation.gpu_count(count)} (torch.cuda.is_available() is '
                f'{torch.cuda.is_available()}); install the CUDA build '
                f'(pytorch.org/get-started) or use d2lpar.torch.devices(), which '
                f'falls back to CPU devices'
            )
    elif device.type == 'mps' and not torch.backends.mps.is_available():
        raise ValueError(
            f"{where}: {device} asked for, but Apple's mps is not "
            f'available here; use d2lpar.torch.devices()'
        )


def check_devices(devices, where):
    """Raise unless ``devices`` is a non-empty list of distinct devices.

    Raises
    ------
    TypeError
        If ``devices`` is not a list/tuple of ``torch.device``.
    ValueError
        If it is empty, names the same device twice, or names a GPU
        this PyTorch cannot use.
    """
    if not isinstance(devices, (list, tuple)):
        raise TypeError(
            f'{where}: devices must be a list of torch.device, got '
            f'{type(devices).__name__} {devices!r}; use '
            f'd2lpar.torch.devices(n)'
        )
    if not devices:
        raise ValueError(
            f'{where}: the device list is empty; pass at least one, '
            f'e.g. d2lpar.torch.devices(1)'
        )
    for i, device in enumerate(devices):
        if not isinstance(device, torch.device):
            raise TypeError(
                f'{where}: devices[{i}] is the {type(device).__name__} '
                f'{device!r}, not a torch.device; use '
                f'd2lpar.torch.devices(n)'
            )
        check_device(device, where)
    # torch.device('cpu') and torch.device('cpu', 0) are the same CPU
    # device: compare them with their index made explicit.
    named = [torch.device(d.type, d.index or 0) for d in devices]
    if len(set(named)) != len(named):
        raise ValueError(
            f'{where}: devices {list(devices)} name the same device '
            f'twice; pass distinct devices, e.g. '
            f'd2lpar.torch.devices(2)'
        )


def check_batch(X, y, where, classes=None, dtype=torch.float32):
    """Raise unless ``X, y`` is a minibatch to train on; return it with
    the labels as ``torch.int64`` (what ``cross_entropy`` wants).

    Parameters
    ----------
    X, y : torch.Tensor
        Features ``(n, ...)`` and class labels ``(n,)``: integers, or
        floats holding whole numbers.
    where : str
        The public function doing the check, for the message.
    classes : int, optional
        Labels must lie in ``0 .. classes-1`` (None: only >= 0).
    dtype : torch.dtype, optional
        The dtype ``X`` must have (the parameters').

    Raises
    ------
    TypeError
        If ``X`` or ``y`` is not a tensor (NumPy, MXNet, lists), or
        ``X`` has another dtype than the parameters.
    ValueError
        If ``y`` is not one label per example, or a label is not a
        class index.
    """
    for name, value in (('X', X), ('y', y)):
        if not isinstance(value, torch.Tensor):
            cast = 'torch.float32' if name == 'X' else 'torch.int64'
            raise TypeError(
                f'{where}: {name} is a {describe(value)}, not a '
                f'torch.Tensor; convert with torch.as_tensor({name}, '
                f'dtype={cast}) (for an MXNet array: torch.as_tensor('
                f'{name}.asnumpy(), dtype={cast}))'
            )
    if X.dtype != dtype:
        scale = '' if X.is_floating_point() else validation.PIXEL_SCALE
        raise TypeError(
            f'{where}: X has dtype {X.dtype}, but the parameters are '
            f'{dtype}; convert with X.to({dtype}){scale}'
        )
    validation.check_label_shape(y.shape, X.shape[0], where, 'y.argmax(dim=1)')
    validation.check_labels(y.detach().to('cpu').numpy(), classes, where)
    if y.dtype != torch.int64:
        y = y.to(torch.int64)
    return X, y


def check_replicas(device_params, devices, where):
    """Raise unless ``device_params[i]`` lives on ``devices[i]`` and
    every parameter requires a gradient.

    Raises
    ------
    ValueError
        If the counts differ, or a replica is on another device.
    TypeError
        If a parameter is not a tensor.
    RuntimeError
        If a parameter does not require a gradient.
    """
    validation.check_replica_count(device_params, devices, where)
    for i, (params, device) in enumerate(zip(device_params, devices)):
        for j, p in enumerate(params):
            if not isinstance(p, torch.Tensor):
                raise TypeError(
                    f'{where}: device_params[{i}][{j}] is a '
                    f'{describe(p)}; convert with torch.as_tensor, '
                    f'then use dp.get_params'
                )
            if not same_place(p.device, device):
                raise ValueError(
                    f'{where}: device_params[{i}][{j}] lives on '
                    f'{p.device}, but devices[{i}] is {device}; build '
                    f'the replicas in the order of devices with '
                    f'dp.get_params(params, devices[{i}])'
                )
            if not p.requires_grad:
                raise RuntimeError(
                    f'{where}: device_params[{i}][{j}] does not require '
                    f'a gradient; call p.requires_grad_() on every '
                    f'parameter, or use dp.get_params(params, device), '
                    f'which does it'
                )
        if len(params) != len(device_params[0]):
            raise ValueError(
                f'{where}: device_params[{i}] holds {len(params)} '
                f'arrays but device_params[0] holds '
                f'{len(device_params[0])}; every replica is the same '
                f'model'
            )


def check_returned_none(returned, algorithm, where):
    """Raise TypeError if an allreduce returned a value instead of
    writing the sum in place (the gradients would be left unsummed)."""
    validation.check_returned_none(
        returned,
        algorithm,
        where,
        'tensor (data[i].copy_(total))',
        'the allreduce contract in help(d2lpar.torch.allreduce)',
    )


def check_step(X, y, device_params, devices, lr):
    """Refuse the arguments of ``train_batch`` a student gets wrong
    first; return ``X, y`` with int64 labels."""
    check_positive('lr', lr, 'train_batch')
    check_devices(devices, 'train_batch')
    check_replicas(device_params, devices, 'train_batch')
    params = device_params[0]
    classes = params[-1].shape[0] if params and params[-1].ndim == 1 else None
    X, y = check_batch(
        X,
        y,
        'train_batch',
        classes=classes,
        dtype=params[0].dtype if params else torch.float32,
    )
    validation.check_enough_examples(
        X.shape[0], len(devices), 'DataLoader(..., drop_last=True)'
    )
    return X, y


def check_split(shards, n, devices):
    """Raise unless a ``split=`` function gave one shard per device, on
    that device, covering all ``n`` examples; return the shards."""
    X_shards, y_shards = shards
    placed = all(
        same_place(x.device, d) and same_place(t.device, d)
        for x, t, d in zip(X_shards, y_shards, devices)
    )
    validation.check_shard_layout(
        [x.shape[0] for x in X_shards],
        [x.device for x in X_shards],
        n,
        devices,
        placed and len(y_shards) == len(devices),
    )
    return X_shards, y_shards
