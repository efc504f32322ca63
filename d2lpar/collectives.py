"""Summing gradients across devices (allreduce)."""

import mxnet as mx
import numpy as onp
from mxnet import np

from .schedules import doubling_schedule, ring_schedule, sharded_schedule
from .splitting import shard_ranges


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
        raise ValueError(
            f'{where}: expected a non-empty list of arrays '
            f'(one per device), got {data!r}'
        )
    for i, a in enumerate(data):
        if not isinstance(a, np.ndarray):
            raise TypeError(
                f'{where}: data[{i}] is a {type(a).__name__}, '
                f'not an mxnet.numpy.ndarray; create arrays '
                f'with mxnet.np'
            )
    first = data[0]
    for i, a in enumerate(data[1:], start=1):
        if a.shape != first.shape:
            raise ValueError(
                f'{where}: data[{i}] has shape {a.shape} but '
                f'data[0] has {first.shape}; every device must '
                f'hold the same parameter'
            )
        if a.dtype != first.dtype:
            raise TypeError(
                f'{where}: data[{i}] is {a.dtype} but data[0] '
                f'is {first.dtype}; cast them to one dtype'
            )


def allreduce(data):
    """Sum arrays living on different devices, in place.

    Taught in :doc:`/book/allreduce`. The naive algorithm: copy every
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

    Notes
    -----
    **The allreduce contract.** Every algorithm that
    ``train_batch(algorithm=...)`` and ``train(algorithm=...)`` accept
    (this one, :func:`ring_allreduce`, :func:`sharded_allreduce`,
    :func:`d2lpar.kvstore_allreduce`, or yours) is a function
    ``algorithm(data) -> None`` where ``data`` is a list of ``k`` arrays
    of one shape and dtype, ``data[i]`` on the i-th device. It must

    1. write in place: afterwards every ``data[i]`` (the same array
       object) holds the elementwise sum of all ``k`` inputs; write with
       ``data[i][:] = ...``, since rebinding ``data[i]`` or returning a
       new array leaves the caller's gradients unchanged;
    2. return None;
    3. keep each array's dtype, shape and device.

    It may create any temporary arrays. ``d2lpar.check_allreduce(fn)``
    checks a function against this contract.

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


def flat_view(a):
    """A 1-D view of ``a`` that shares its memory.

    ``mxnet.numpy``'s own ``reshape`` copies, so writes to its result
    would be lost; the legacy NDArray ``reshape`` returns a view.

    Parameters
    ----------
    a : mxnet.numpy.ndarray

    Returns
    -------
    mxnet.numpy.ndarray
        Shape ``(a.size,)``; writing to it writes to ``a``.
    """
    return a.as_nd_ndarray().reshape((-1,)).as_np_ndarray()


# Receive buffers reused across calls. Filling freshly allocated memory
# costs about 6x a plain copy on the CPU (every page is touched for the
# first time), which would dominate any allreduce of large arrays. One
# buffer per (device, dtype, slot), grown to the largest chunk it has
# held and sliced for smaller ones: the cache holds at most one buffer
# per receive slot, however many sizes pass through it.
_BUFFERS = {}


def _buffer(ctx, dtype, size, slot):
    key = (ctx, str(dtype), slot)
    if key not in _BUFFERS or _BUFFERS[key].size < size:
        _BUFFERS[key] = mx.nd.zeros(size, ctx=ctx, dtype=dtype)
    return _BUFFERS[key][:size]


def free_buffers():
    """Drop the receive buffers :func:`run_schedule` keeps between calls.

    Returns
    -------
    int
        Bytes freed.
    """
    freed = sum(
        b.size * onp.dtype(b.dtype).itemsize for b in _BUFFERS.values()
    )
    _BUFFERS.clear()
    return freed


def run_schedule(data, schedule):
    """Run an allreduce schedule on arrays living on different devices.

    Taught in :doc:`/book/allreduce-algorithms`. Each array is cut into
    ``len(data)`` contiguous chunks; every :class:`Transfer` copies one
    chunk (or the whole array) to another device, which adds it to its
    own or is overwritten by it. Additions go through receive buffers
    that are all filled before any is added, so two devices may swap
    and add in one step; an overwrite is copied straight in, so it must
    not write a chunk that another transfer of the same step reads.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        Same shape and dtype, one per device; changed in place.
    schedule : list of list of Transfer
        For example :func:`d2lpar.schedules.ring_schedule`.

    Raises
    ------
    TypeError, ValueError
        See :func:`check_allreduce_input`.
    """
    check_allreduce_input(data, 'run_schedule')
    # Legacy NDArray views share memory and accept copyto into a slice.
    flats = [a.as_nd_ndarray().reshape((-1,)) for a in data]
    bounds = [slice(a, b) for a, b in shard_ranges(flats[0].size, len(data))]
    whole = slice(0, flats[0].size)
    for step in schedule:
        received = []
        for slot, t in enumerate(step):
            part = whole if t.chunk is None else bounds[t.chunk]
            if part.start == part.stop:
                continue  # an empty chunk (fewer elements than devices)
            if t.reduce:
                buffer = _buffer(
                    data[t.dst].ctx,
                    data[0].dtype,
                    part.stop - part.start,
                    slot,
                )
                flats[t.src][part].copyto(buffer)
                received.append((flats[t.dst][part], buffer))
            else:
                flats[t.src][part].copyto(flats[t.dst][part])
        for target, buffer in received:
            target += buffer


def sharded_allreduce(data):
    """Sum arrays on different devices, spreading the work over all.

    Taught in :doc:`/book/exercises` and
    :doc:`/book/allreduce-algorithms`. Device ``j`` owns the ``j``-th of
    ``k`` contiguous chunks: it gathers that chunk from every other
    device and adds it up (reduce-scatter), then sends the summed chunk back to all of them
    (all-gather); see :func:`d2lpar.schedules.sharded_schedule`. Each
    device sends about ``2 (k-1) N / k`` elements and receives as many,
    where the naive version's first device receives ``(k-1) N`` and sends
    as many back: ``k / 2`` times less for the busiest device, and all
    devices' links busy at once. Works for any ``k`` and any size, even fewer
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
    run_schedule(data, sharded_schedule(len(data)))


def ring_allreduce(data):
    """Sum arrays on different devices by passing chunks around a ring.

    Taught in :doc:`/book/allreduce-algorithms`. Device ``i`` only
    talks to device ``(i+1) % k``: ``k-1`` reduce-scatter steps, then ``k-1``
    all-gather steps (:func:`d2lpar.schedules.ring_schedule`). Every
    device sends and receives ``2 (k-1) N / k`` elements, whatever ``k``,
    and all links are busy at every step.

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
    check_allreduce_input(data, 'ring_allreduce')
    run_schedule(data, ring_schedule(len(data)))


def doubling_allreduce(data):
    """Sum arrays on different devices by recursive doubling.

    Taught in :doc:`/book/allreduce-algorithms`. In each step pairs of
    devices swap their whole arrays and add
    (:func:`d2lpar.schedules.doubling_schedule`): about ``log2 k``
    messages per device instead of the ring's ``2 (k-1)``, at the price
    of sending the whole array each time. The algorithm for small
    arrays, where the number of messages, not the bytes, sets the time.

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
    check_allreduce_input(data, 'doubling_allreduce')
    run_schedule(data, doubling_schedule(len(data)))
