"""Allreduce algorithms as schedules of transfers between devices.

A schedule is a list of steps; a step is a list of :class:`Transfer`
that happen at the same time. Writing an algorithm down this way lets one
function run it (:func:`d2lpar.run_schedule`), another count the bytes
each device sends and receives (:func:`traffic`), and a third replay it
on paper to draw which chunk each device holds (:func:`trace`).

Arrays are cut into ``k`` contiguous chunks (sizes from
:func:`d2lpar.shard_sizes`), one per device; ``chunk=None`` means the
whole array.
"""

import collections

from ..splitting import shard_sizes

Transfer = collections.namedtuple('Transfer', 'src dst chunk reduce')
Transfer.__doc__ = (
    'Send ``chunk`` from device ``src`` to ``dst``, which '
    'adds it to its own (``reduce=True``) or overwrites.'
)


def naive_schedule(k):
    """The naive allreduce: reduce onto device 0, then broadcast back.

    Taught in :doc:`/book/allreduce`.

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
        ``k-1`` reduce steps into device 0, then ``k-1`` broadcasts.
    """
    reduce = [[Transfer(i, 0, None, True)] for i in range(1, k)]
    broadcast = [[Transfer(0, i, None, False)] for i in range(1, k)]
    return reduce + broadcast


def sharded_schedule(k):
    """Each device reduces its own chunk, then sends it to all others.

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
        Two steps: a reduce-scatter (device ``j`` gathers and adds chunk
        ``j`` from everyone) and an all-gather (it sends chunk ``j`` back
        to everyone).
    """
    pairs = [(i, j) for j in range(k) for i in range(k) if i != j]
    return [
        [Transfer(i, j, j, True) for i, j in pairs],
        [Transfer(j, i, j, False) for i, j in pairs],
    ]


def ring_schedule(k):
    """Ring allreduce: ``k-1`` reduce-scatter then ``k-1`` all-gather steps.

    Device ``i`` only ever sends to its neighbour ``(i+1) % k``. In step
    ``s`` of the reduce-scatter it sends chunk ``(i-s) % k``, and the
    neighbour adds it to its own copy; after ``k-1`` steps device ``i``
    holds the full sum of chunk ``(i+1) % k``. The all-gather then passes
    the finished chunks around the ring, overwriting.

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
    """
    reduce_scatter = [
        [Transfer(i, (i + 1) % k, (i - s) % k, True) for i in range(k)]
        for s in range(k - 1)
    ]
    all_gather = [
        [Transfer(i, (i + 1) % k, (i + 1 - s) % k, False) for i in range(k)]
        for s in range(k - 1)
    ]
    return reduce_scatter + all_gather


def doubling_schedule(k):
    """Recursive doubling: every device ends with the sum in few messages.

    With ``p = 2**m`` the largest power of two not above ``k``, step
    ``s`` pairs device ``i < p`` with device ``i XOR 2**s``: the two
    swap their whole arrays and both add, so after ``m`` steps each of
    the ``p`` devices holds the sum of all ``p``. The ``r = k - p``
    devices beyond ``p`` first add their array into device ``i - p``
    and receive the finished sum from it at the end. That is ``m``
    messages per device when ``k`` is a power of two and ``m + 2``
    otherwise, against the ring's ``2 (k-1)``; each message carries the
    whole array instead of a ``1/k`` chunk.

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
    """
    m = k.bit_length() - 1
    p = 1 << m
    fold = [[Transfer(p + i, i, None, True) for i in range(k - p)]]
    swaps = [
        [Transfer(i, i ^ (1 << s), None, True) for i in range(p)]
        for s in range(m)
    ]
    unfold = [[Transfer(i, p + i, None, False) for i in range(k - p)]]
    return fold + swaps + unfold if k > p else swaps


# The hand-written algorithms by name: the chapters, the benchmark, the
# figures and the tests all take them from here.
SCHEDULES = {
    'naive': naive_schedule,
    'sharded': sharded_schedule,
    'ring': ring_schedule,
    'doubling': doubling_schedule,
}


def traffic(schedule, k, n, itemsize=4):
    """Bytes each device sends and receives when running ``schedule``.

    Parameters
    ----------
    schedule : list of list of Transfer
    k : int
        Number of devices.
    n : int
        Elements per array.
    itemsize : int, optional
        Bytes per element (4 for float32).

    Returns
    -------
    sent, received : list of int
        Per device, in bytes.
    """
    sizes = shard_sizes(n, k)
    sent, received = [0] * k, [0] * k
    for step in schedule:
        for t in step:
            nbytes = itemsize * (n if t.chunk is None else sizes[t.chunk])
            sent[t.src] += nbytes
            received[t.dst] += nbytes
    return sent, received


def trace(schedule, k):
    """Replay ``schedule`` on paper: who holds what after each step.

    Parameters
    ----------
    schedule : list of list of Transfer
    k : int
        Number of devices.

    Returns
    -------
    list of list of list of int
        ``states[t][d][c]``: how many devices' contributions device
        ``d``'s chunk ``c`` contains after step ``t`` (``states[0]`` is
        the start, all ones). Every entry is ``k`` at the end of a correct
        allreduce.
    """
    held = [[{d} for _ in range(k)] for d in range(k)]
    states = [[[len(s) for s in row] for row in held]]
    for step in schedule:
        # Transfers within a step read the state from before the step.
        sent = [(t, [set(s) for s in held[t.src]]) for t in step]
        for t, src in sent:
            chunks = range(k) if t.chunk is None else [t.chunk]
            for c in chunks:
                held[t.dst][c] = (
                    held[t.dst][c] | src[c] if t.reduce else set(src[c])
                )
        states.append([[len(s) for s in row] for row in held])
    return states


def reduce_scatter_schedule(k):
    """Ring reduce-scatter after which device ``i`` owns chunk ``i``.

    Taught in :doc:`/book/zero`. The first
    half of :func:`ring_schedule`, with chunks renumbered so that device
    ``i`` ends with the full sum of chunk ``i`` (the other chunks hold
    partial sums). In step ``s`` device ``i`` sends chunk
    ``(i-1-s) % k`` to ``(i+1) % k``, which adds it to its own.

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
        ``k-1`` steps of ``k`` transfers.
    """
    return [
        [Transfer(i, (i + 1) % k, (i - 1 - s) % k, True) for i in range(k)]
        for s in range(k - 1)
    ]


def all_gather_schedule(k):
    """Ring all-gather of chunk ``i`` from device ``i`` to every device.

    Taught in :doc:`/book/zero`. The second
    half of :func:`ring_schedule` for the ownership that
    :func:`reduce_scatter_schedule` leaves: in step ``s`` device ``i``
    sends chunk ``(i-s) % k`` to ``(i+1) % k``, which overwrites its
    own. Run after :func:`reduce_scatter_schedule` it completes an
    allreduce; run alone it shares what each device computed on its
    chunk (ZeRO's updated parameter shards).

    Parameters
    ----------
    k : int
        Number of devices.

    Returns
    -------
    list of list of Transfer
        ``k-1`` steps of ``k`` transfers.
    """
    return [
        [Transfer(i, (i + 1) % k, (i - s) % k, False) for i in range(k)]
        for s in range(k - 1)
    ]
