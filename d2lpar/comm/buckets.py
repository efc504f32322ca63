"""Gradient buckets: pack many arrays into one buffer, reduce it once;
and which parameters share a bucket of a given size."""

from mxnet import np

from ..collectives import allreduce


def bucketed_allreduce(arrays_per_device, algorithm=allreduce):
    """Allreduce many arrays per device as one contiguous buffer.

    Taught in :doc:`/book/buckets`. Each device copies all its
    arrays into one flat buffer; ``algorithm`` reduces the ``k`` buffers
    in a single call; the sums are copied back. The allreduce's fixed
    cost per message (a latency, a Python call) is paid once instead of
    once per array; the copies in and out are the price, and whether it
    pays depends on which is larger. PyTorch's DistributedDataParallel
    groups gradients into such buckets.

    Parameters
    ----------
    arrays_per_device : list of list of mxnet.numpy.ndarray
        ``arrays_per_device[d]`` are device ``d``'s arrays (for example
        its gradients), the same shapes in the same order on every device.
    algorithm : callable, optional
        An allreduce with the contract of :func:`d2lpar.allreduce`.

    Returns
    -------
    None
        Every array now holds the sum of its counterparts.

    Raises
    ------
    ValueError
        If the devices hold different numbers or shapes of arrays.
    """
    shapes = [[a.shape for a in arrays] for arrays in arrays_per_device]
    if any(s != shapes[0] for s in shapes):
        raise ValueError(
            'bucketed_allreduce: every device must hold '
            'arrays of the same shapes in the same order; '
            f'got {shapes}'
        )
    buffers = []
    for arrays in arrays_per_device:
        # Copies into a new buffer, not np.concatenate: MXNet's concat
        # operator took several times as long, and far longer when its
        # OpenMP threads met other work on the cores.
        buffer = np.empty(
            sum(a.size for a in arrays),
            ctx=arrays[0].ctx,
            dtype=arrays[0].dtype,
        )
        for a, part in zip(arrays, _parts(buffer, arrays)):
            _flat(a).copyto(part)
        buffers.append(buffer)
    algorithm(buffers)
    for arrays, buffer in zip(arrays_per_device, buffers):
        for a, part in zip(arrays, _parts(buffer, arrays)):
            part.copyto(_flat(a))


# Legacy NDArray views: they share memory, and copyto between them is
# faster than mxnet.numpy's setitem.
def _flat(a):
    return a.as_nd_ndarray().reshape((-1,))


def _parts(buffer, arrays):
    """Views of ``buffer``, one the size of each of ``arrays`` in turn."""
    packed, start = buffer.as_nd_ndarray(), 0
    for a in arrays:
        yield packed[start : start + a.size]
        start += a.size


def make_buckets(sizes, bucket_bytes=None, reverse=True, itemsize=4):
    """Group parameter indices into buckets of at most ``bucket_bytes``.

    Parameters
    ----------
    sizes : sequence of int
        Elements of each parameter, in the network's order.
    bucket_bytes : int, optional
        Largest bucket; a parameter larger than that gets a bucket of its
        own. None: one bucket per parameter.
    reverse : bool, optional
        Fill buckets from the last parameter to the first, the order in
        which the backward pass finishes them.
    itemsize : int, optional
        Bytes per element.

    Returns
    -------
    list of list of int
        Every index exactly once.

    Examples
    --------
    The 400-byte parameter 2 gets a bucket of its own, and parameter 3
    cannot share one with it:

    >>> make_buckets([10, 10, 100, 10], bucket_bytes=80)
    [[3], [2], [1, 0]]
    """
    order = list(range(len(sizes)))[:: -1 if reverse else 1]
    if bucket_bytes is None:
        return [[i] for i in order]
    buckets, current, used = [], [], 0
    for i in order:
        nbytes = sizes[i] * itemsize
        if current and used + nbytes > bucket_bytes:
            buckets.append(current)
            current, used = [], 0
        current.append(i)
        used += nbytes
    return buckets + [current] if current else buckets
