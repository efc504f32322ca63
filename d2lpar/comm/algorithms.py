"""Allreduce algorithms run from schedules: sharded, ring, doubling.

:func:`run_schedule` runs any list of transfers
(:mod:`d2lpar.comm.schedules`) on arrays living on different devices;
:func:`sharded_allreduce`, :func:`ring_allreduce` and
:func:`doubling_allreduce` are its three schedules. :data:`ALGORITHMS`
names every allreduce of the book, the first part's
:func:`d2lpar.allreduce` and MXNet's kvstore included: the chapters,
the benchmarks, the figures and the tests take them from there.
"""

import mxnet as mx
import numpy as onp

from ..collectives import allreduce, check_allreduce_input
from ..splitting import shard_ranges
from .kvstore import kvstore_allreduce
from .schedules import (
    SCHEDULES,
    doubling_schedule,
    naive_schedule,
    ring_schedule,
    sharded_schedule,
)


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
    """Drop the receive buffers :func:`d2lpar.run_schedule` keeps between
    calls.

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
        For example :func:`d2lpar.comm.ring_schedule`.

    Raises
    ------
    TypeError, ValueError
        See :func:`~d2lpar.collectives.check_allreduce_input`.
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
    (all-gather); see :func:`d2lpar.comm.sharded_schedule`. Each
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
        See :func:`~d2lpar.collectives.check_allreduce_input`.
    """
    check_allreduce_input(data, 'sharded_allreduce')
    run_schedule(data, sharded_schedule(len(data)))


def ring_allreduce(data):
    """Sum arrays on different devices by passing chunks around a ring.

    Taught in :doc:`/book/allreduce-algorithms`. Device ``i`` only
    talks to device ``(i+1) % k``: ``k-1`` reduce-scatter steps, then ``k-1``
    all-gather steps (:func:`d2lpar.comm.ring_schedule`). Every
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
        See :func:`~d2lpar.collectives.check_allreduce_input`.
    """
    check_allreduce_input(data, 'ring_allreduce')
    run_schedule(data, ring_schedule(len(data)))


def doubling_allreduce(data):
    """Sum arrays on different devices by recursive doubling.

    Taught in :doc:`/book/allreduce-algorithms`. In each step pairs of
    devices swap their whole arrays and add
    (:func:`d2lpar.comm.doubling_schedule`): about ``log2 k``
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
        See :func:`~d2lpar.collectives.check_allreduce_input`.
    """
    check_allreduce_input(data, 'doubling_allreduce')
    run_schedule(data, doubling_schedule(len(data)))


def _scheduled(make):
    return lambda data: run_schedule(data, make(len(data)))


# Every allreduce by name. The hand-written ones run their schedules,
# except the first part's naive allreduce itself, which allocates a
# fresh array for every transfer; 'naive (reused)' runs the same
# transfers through run_schedule's reused buffers and so tells the two
# costs apart.
ALGORITHMS = {
    'naive': allreduce,
    'naive (reused)': _scheduled(naive_schedule),
    **{
        name: _scheduled(make)
        for name, make in SCHEDULES.items()
        if name != 'naive'
    },
    'kvstore device': kvstore_allreduce,
    'kvstore local': lambda data: kvstore_allreduce(data, 'local'),
}
