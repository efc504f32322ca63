"""Argument checks that hold in either framework: numbers, labels, shards.

:mod:`d2lpar.checks` (MXNet) and :mod:`d2lpar.torch.checks` (PyTorch)
refuse what a student passes in with a message that names the function,
says what was wrong and what to do. What does not depend on the
framework's types lives here, on Python numbers and host NumPy arrays,
and imports neither MXNet nor PyTorch: both use it.
"""

import numbers

import numpy as onp

# Said where X holds integer pixels: the fix beside the cast.
PIXEL_SCALE = (
    " / 255 (pixels 0..255 become 0..1, as the book's loader gives them)"
)


def gpu_count(n):
    """``n`` GPUs in words for a message: 'no GPU', '1 GPU', '2 GPUs'."""
    if n == 0:
        return 'no GPU'
    return f'{n} GPU' if n == 1 else f'{n} GPUs'


def check_positive(name, value, where, integer=False):
    """Raise unless ``value`` is a positive number (an int if asked).

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed.
    where : str
        The public function doing the check, for the message.
    integer : bool, optional
        Require a whole number (``bool`` is refused).

    Raises
    ------
    TypeError
        If ``value`` is not a number (or not an integer when required).
    ValueError
        If ``value`` is zero or negative.
    """
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        wanted = 'an int' if integer else 'a number'
        raise TypeError(
            f'{where}: {name} must be {wanted}, got '
            f'{type(value).__name__} {value!r}'
        )
    if value <= 0:
        raise ValueError(
            f'{where}: {name} must be positive, got {value}; '
            f'pass a value greater than 0'
        )


def describe(value):
    """``numpy.ndarray`` for a NumPy array: the type a student recognises."""
    kind = type(value)
    return f'{kind.__module__.split(".")[0]}.{kind.__name__}'


def check_label_shape(shape, n, where, one_hot):
    """Raise unless labels of ``shape`` are one class index per example
    of a batch of ``n``; ``one_hot`` is the framework's expression that
    turns one-hot labels into indices (for the message).

    Raises
    ------
    ValueError
        If the labels are a column ``(n, 1)``, one-hot ``(n, classes)``,
        or of any other rank than 1.
    """
    shape = tuple(shape)
    if len(shape) == 2 and shape[1] == 1:
        raise ValueError(
            f'{where}: y has shape {shape}, expected ({n},), one '
            f'class index per example; flatten it with y.reshape(-1)'
        )
    if len(shape) != 1:
        hint = (
            f'they look one-hot; pass class indices, e.g. {one_hot}'
            if len(shape) == 2
            else 'pass one class index per example'
        )
        raise ValueError(
            f'{where}: y has shape {shape}, expected ({n},), one class '
            f'index per example; {hint}'
        )


def wrong_labels(labels, classes):
    """The first label that is not a class index, and why, or None.

    ``labels`` is a NumPy array (on the host); ``classes`` the number of
    outputs, or None when unknown (only negatives are refused then).
    """
    whole = labels == onp.round(labels)
    if not whole.all():
        return int(onp.argmin(whole)), 'not a whole number'
    bad = labels < 0
    if classes is not None:
        bad |= labels >= classes
    if bad.any():
        return int(onp.argmax(bad)), 'out of range'
    return None


def check_labels(labels, classes, where):
    """Raise unless every label (host NumPy values) is a class index.

    Raises
    ------
    ValueError
        Naming the first label that is not a whole number or lies
        outside ``0 .. classes-1``, and the fix (``y - 1`` for labels
        numbered from 1).
    """
    wrong = wrong_labels(labels, classes)
    if wrong is None:
        return
    i, why = wrong
    value = labels[i].item()
    span = f'0..{classes - 1}' if classes else '0, 1, 2, ...'
    if why == 'out of range':
        numbered_from_1 = (
            classes and labels.min() >= 1 and labels.max() == classes
        )
        fix = (
            'they look numbered from 1: pass y - 1'
            if numbered_from_1
            else f'keep only examples whose labels are in {span}, or '
            f'relabel them'
        )
    else:
        fix = (
            'pass the class index of each example, a whole number (soft '
            'or mixed labels are not supported by the cross-entropy used '
            'here)'
        )
    raise ValueError(
        f'{where}: y[{i}] is {value!r}, {why}: labels must be class '
        f'indices {span}; {fix}'
    )


def check_replica_count(device_params, devices, where):
    """Raise ValueError unless there is one replica per device."""
    if len(device_params) != len(devices):
        raise ValueError(
            f'{where}: {len(device_params)} parameter replicas for '
            f'{len(devices)} devices; make one per device with '
            f'dp.get_params(params, device)'
        )


def check_enough_examples(n, k, drop, accumulate=None):
    """Raise ValueError unless a batch of ``n`` examples gives every one
    of ``k`` devices at least one per micro-batch; ``drop`` says how the
    framework's loader drops a last partial batch."""
    need = (accumulate or 1) * k
    if n >= need:
        return
    per = (
        f'{k} devices x accumulate={accumulate} need at least {need} (one '
        f'per device per micro-batch)'
        if accumulate is not None
        else f'{k} devices need at least {need} (one per device)'
    )
    raise ValueError(
        f'train_batch: the batch has {n} examples, but {per}; a last '
        f'partial batch of an epoch is the usual cause: choose a '
        f'batch_size that leaves at least {need} examples in it, or drop '
        f'it with {drop}'
    )


def check_shard_layout(sizes, places, n, devices, right):
    """Raise ValueError unless a ``split=`` function's shards are right
    (``right``: one per device, on it), with sizes adding up to ``n``."""
    if right and len(sizes) == len(devices) and sum(sizes) == n:
        return
    raise ValueError(
        f'train_batch: split returned X shards of sizes {sizes} on '
        f'{places} for {n} examples on {list(devices)}; it must return '
        f'(X_shards, y_shards) with shard i on devices[i], sizes adding '
        f'up to {n}'
    )


def check_returned_none(returned, algorithm, where, write, contract):
    """Raise TypeError if an allreduce returned a value instead of
    writing the sum in place (the gradients would be left unsummed);
    ``write`` shows the framework's in-place write, ``contract`` where
    the allreduce contract is stated."""
    if returned is not None:
        name = getattr(algorithm, '__name__', repr(algorithm))
        raise TypeError(
            f'{where}: algorithm {name} returned a '
            f'{type(returned).__name__} instead of None; an allreduce '
            f'must write the sum into every input {write}, see {contract}'
        )
