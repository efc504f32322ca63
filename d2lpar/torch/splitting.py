"""Splitting a minibatch across devices, in PyTorch.

The shard sizes are :func:`d2lpar.shard_sizes`' (framework-neutral,
shared): the first ``n % k`` shards get one extra example.
"""

from ..splitting import shard_ranges, shard_sizes
from .checks import check_devices

__all__ = ['shard_ranges', 'shard_sizes', 'split_batch']


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` into one contiguous shard per device.

    Taught in :doc:`/book/split-batch`. The twin of
    :func:`d2lpar.split_batch`: a batch that does not divide evenly is
    split into shards whose sizes differ by at most one.

    Parameters
    ----------
    X : torch.Tensor, shape (n, ...)
        Features.
    y : torch.Tensor, shape (n,)
        Labels.
    devices : list of torch.device
        Distinct devices; ``n >= len(devices)``.

    Returns
    -------
    X_shards, y_shards : list of torch.Tensor
        Shard ``i`` lives on ``devices[i]``: a copy, also on the CPU's
        labels (``.to(torch.device('cpu', i))`` returns a new tensor); only the
        shard for the GPU that ``X`` already lives on shares its memory.
        Every example lands on exactly one device, in order.

    Raises
    ------
    ValueError
        If ``X`` and ``y`` hold different numbers of examples, or there
        are fewer examples than devices.
    TypeError, ValueError
        If ``devices`` is not a non-empty list of distinct devices.

    Examples
    --------
    >>> import torch
    >>> X_shards, y_shards = split_batch(torch.arange(20).reshape(4, 5),
    ...     torch.arange(4), [torch.device('cpu', 0), torch.device('cpu', 1)])
    >>> [tuple(x.shape) for x in X_shards]
    [(2, 5), (2, 5)]
    """
    check_devices(devices, 'split_batch')
    n, k = X.shape[0], len(devices)
    if y.shape[0] != n:
        raise ValueError(
            f'split_batch: X has {n} examples but y has {y.shape[0]}; '
            f'pass matching batches'
        )
    if n < k:
        raise ValueError(
            f'split_batch: {n} examples cannot be split over {k} devices '
            f'(each needs at least one); use a larger batch or fewer '
            f'devices'
        )
    X_shards, y_shards = [], []
    for device, (start, stop) in zip(devices, shard_ranges(n, k)):
        X_shards.append(X[start:stop].to(device))
        y_shards.append(y[start:stop].to(device))
    return X_shards, y_shards
