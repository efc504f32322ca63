"""Splitting a minibatch across devices."""


def shard_sizes(n, k):
    """Sizes of ``k`` contiguous shards of ``n`` examples.

    The first ``n % k`` shards get one extra example, so sizes differ by
    at most one.

    Parameters
    ----------
    n : int
        Number of examples (``n >= k``).
    k : int
        Number of shards.

    Returns
    -------
    list of int
        ``k`` sizes that add up to ``n``.

    Examples
    --------
    >>> shard_sizes(10, 3)
    [4, 3, 3]
    """
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` into one contiguous shard per device.

    Taught in :doc:`/book/split-batch`. Unlike d2l's version it accepts
    a batch that does not divide evenly (256 examples on 3 devices); the
    shard sizes are those of MXNet's ``split_and_load(...,
    even_split=False)``.

    Parameters
    ----------
    X : mxnet.numpy.ndarray, shape (n, ...)
        Features.
    y : mxnet.numpy.ndarray, shape (n,)
        Labels.
    devices : list of mxnet.Context
        Distinct devices; ``n >= len(devices)``.

    Returns
    -------
    X_shards, y_shards : list of mxnet.numpy.ndarray
        Shard ``i`` lives on ``devices[i]``. Every example lands on
        exactly one device, in order, and shard sizes differ by at most
        one.

    Raises
    ------
    ValueError
        If ``X`` and ``y`` hold different numbers of examples, or there
        are fewer examples than devices.
    TypeError, ValueError
        If ``devices`` is not a non-empty list of distinct contexts.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxnet import np
    >>> X_shards, y_shards = split_batch(np.arange(20).reshape(4, 5),
    ...                                  np.arange(4), [mx.cpu(0), mx.cpu(1)])
    >>> [x.shape for x in X_shards]
    [(2, 5), (2, 5)]
    """
    # (imported here so that the framework-neutral functions above and
    # below load without MXNet)
    from .checks import check_devices

    check_devices(devices, 'split_batch')
    n, k = X.shape[0], len(devices)
    if y.shape[0] != n:
        raise ValueError(
            f'split_batch: X has {n} examples but y has '
            f'{y.shape[0]}; pass matching batches'
        )
    if n < k:
        raise ValueError(
            f'split_batch: {n} examples cannot be split over '
            f'{k} devices (each needs at least one); use a '
            f'larger batch or fewer devices'
        )
    # Not gluon.utils.split_and_load: with even_split=False it gives the
    # same sizes (divmod, the first n % k shards one extra example), but it
    # splits one array at a time, and when n < k it silently gives some
    # device an empty shard. Here X and y are split in one call, checked
    # against each other, and n < k is refused with an error that says
    # what to do.
    X_shards, y_shards = [], []
    for device, (start, stop) in zip(devices, shard_ranges(n, k)):
        X_shards.append(X[start:stop].as_in_ctx(device))
        y_shards.append(y[start:stop].as_in_ctx(device))
    return X_shards, y_shards


def shard_ranges(n, k):
    """``(start, stop)`` of each of the ``k`` shards of :func:`shard_sizes`.

    Parameters
    ----------
    n : int
        Number of elements.
    k : int
        Number of shards.

    Returns
    -------
    list of tuple of int
        Contiguous, in order, covering ``0 .. n``.

    Examples
    --------
    >>> shard_ranges(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    ranges, start = [], 0
    for size in shard_sizes(n, k):
        ranges.append((start, start + size))
        start += size
    return ranges


def micro_batches(X, y, m):
    """``m`` contiguous micro-batches of ``X, y``, a list of ``(X, y)``
    (sizes differ by at most 1; :func:`d2lpar.shard_ranges`). Slicing only:
    MXNet's arrays and PyTorch's tensors alike."""
    return [
        (X[start:stop], y[start:stop])
        for start, stop in shard_ranges(X.shape[0], m)
    ]
