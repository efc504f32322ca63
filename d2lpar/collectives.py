"""Summing gradients across devices (allreduce)."""
from mxnet import np

from .splitting import shard_sizes


def check_allreduce_input(data, where):
    """Raise unless ``data`` is a non-empty list of same-shape arrays.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        One array per device.
    where : str
        The public function doing the check, for the message.

    Raises
    ------
    TypeError
        If ``data`` is not a list of MXNet arrays, or dtypes differ.
    ValueError
        If it is empty or the shapes differ.
    """
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError(f'{where}: expected a non-empty list of arrays '
                         f'(one per device), got {data!r}')
    for i, a in enumerate(data):
        if not isinstance(a, np.ndarray):
            raise TypeError(f'{where}: data[{i}] is a {type(a).__name__}, '
                            f'not an mxnet.numpy.ndarray; create arrays '
                            f'with mxnet.np')
    first = data[0]
    for i, a in enumerate(data[1:], start=1):
        if a.shape != first.shape:
            raise ValueError(f'{where}: data[{i}] has shape {a.shape} but '
                             f'data[0] has {first.shape}; every device must '
                             f'hold the same parameter')
        if a.dtype != first.dtype:
            raise TypeError(f'{where}: data[{i}] is {a.dtype} but data[0] '
                            f'is {first.dtype}; cast them to one dtype')


def allreduce(data):
    """Sum arrays living on different devices, in place.

    Taught in the chapter "allreduce". The naive algorithm: copy every
    array to the first device, add there, then copy the sum back to every
    other device. The first device moves (k-1) arrays in and (k-1) out.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        Same shape and dtype, typically one per device.

    Returns
    -------
    None
        Every ``data[i]`` now holds the elementwise sum of all inputs.

    Raises
    ------
    TypeError, ValueError
        See :func:`check_allreduce_input`.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxnet import np
    >>> data = [np.ones(2, ctx=mx.cpu(0)), 2 * np.ones(2, ctx=mx.cpu(1))]
    >>> allreduce(data)
    >>> data[1]
    array([3., 3.], ctx=cpu(1))
    """
    check_allreduce_input(data, 'allreduce')
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def sharded_allreduce(data):
    """Sum arrays on different devices, spreading the work over all.

    Taught in the exercises of the first part, and in the chapter on
    communication. Device ``j`` owns the ``j``-th of ``k`` contiguous
    chunks of the flattened array: it gathers that chunk from every
    other device and adds it up (reduce-scatter), then sends the summed
    chunk back to all of them (all-gather). Each device moves about
    ``2 (k-1) N / k`` elements instead of the first device's
    ``2 (k-1) N``. Works for any ``k`` and any size, even fewer
    elements than devices (some chunks are then empty).

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        Same shape and dtype, typically one per device.

    Returns
    -------
    None
        Every ``data[i]`` now holds the elementwise sum of all inputs.

    Raises
    ------
    TypeError, ValueError
        See :func:`check_allreduce_input`.
    """
    check_allreduce_input(data, 'sharded_allreduce')
    k = len(data)
    # mx.np's reshape copies (unlike NumPy's), so we work on flat copies
    # and write them back at the end.
    flats = [a.reshape(-1) for a in data]
    starts = [0]
    for size in shard_sizes(flats[0].size, k):
        starts.append(starts[-1] + size)
    for j in range(k):  # reduce-scatter: device j sums chunk j
        chunk = slice(starts[j], starts[j + 1])
        for i in range(k):
            if i != j and starts[j] < starts[j + 1]:
                flats[j][chunk] += flats[i][chunk].copyto(data[j].ctx)
    for j in range(k):  # all-gather: device j sends its summed chunk
        chunk = slice(starts[j], starts[j + 1])
        for i in range(k):
            if i != j and starts[j] < starts[j + 1]:
                flats[i][chunk] = flats[j][chunk].copyto(data[i].ctx)
    for a, flat in zip(data, flats):
        a[:] = flat.reshape(a.shape)
