"""The alpha-beta cost model of allreduce algorithms.

Sending a message of ``m`` bytes over a link costs ``alpha + m / B``: a
fixed latency ``alpha`` (seconds) plus the bytes over the bandwidth ``B``
(bytes per second). Each device has one link, which can send and receive
at the same time.
"""

import math


def _doubling_messages(k):
    # log2 k swaps, plus a fold and an unfold when k is no power of two
    m = k.bit_length() - 1
    return m if k == 1 << m else m + 2


# How each algorithm uses the busiest device's link, as a function of k:
# (messages it carries one after the other, c), each message N / c bytes.
MESSAGE_PATTERNS = {
    'naive': lambda k: (2 * (k - 1), 1),  # root: k-1 in, k-1 out
    'cpu': lambda k: (2 * k, 1),  # host: k in, k out
    'sharded': lambda k: (2 * (k - 1), k),  # k-1 chunks per phase
    'ring': lambda k: (2 * (k - 1), k),  # k-1 steps per phase
    'doubling': lambda k: (_doubling_messages(k), 1),  # whole arrays
}


def _pattern(algorithm, k, where):
    if algorithm not in MESSAGE_PATTERNS:
        raise ValueError(
            f'{where}: unknown algorithm {algorithm!r}; use '
            f'one of {sorted(MESSAGE_PATTERNS)}'
        )
    return MESSAGE_PATTERNS[algorithm](k) if k > 1 else (0, 1)


def allreduce_time(algorithm, k, nbytes, bandwidth, latency=0.0):
    """Predicted seconds of one allreduce of ``nbytes`` on ``k`` devices.

    Taught in :doc:`/book/cost-model`. The busiest link sets
    the pace; it carries its messages one after the other, each costing
    ``alpha + m / B``:

    - naive (reduce onto device 0): ``2 (k-1) (alpha + N/B)``
    - cpu (a parameter server on the host, one shared link):
      ``2 k (alpha + N/B)``
    - sharded and ring: ``2 (k-1) (alpha + N/(k B))``
    - doubling: ``log2(k) (alpha + N/B)`` when ``k`` is a power of two,
      else ``(floor(log2 k) + 2) (alpha + N/B)``: a fold and an unfold
      more (sends and receives overlap).

    Parameters
    ----------
    algorithm : {'naive', 'cpu', 'sharded', 'ring', 'doubling'}
    k : int
        Devices.
    nbytes : float
        Bytes per device's array (N).
    bandwidth : float
        Bytes per second of one link (B).
    latency : float, optional
        Seconds per message (alpha).

    Returns
    -------
    float
        Seconds; 0 for one device.

    Raises
    ------
    ValueError
        For an unknown algorithm.
    """
    messages, cut = _pattern(algorithm, k, 'allreduce_time')
    return messages * (latency + nbytes / cut / bandwidth)


def crossover(k, bandwidth, latency):
    """Bytes at which the ring's and recursive doubling's predicted times
    (:func:`allreduce_time`) meet on ``k`` devices: doubling, with fewer
    messages, is the faster below, the ring above.

    Derived step by step in :doc:`/book/cost-model`;
    :doc:`/book/measuring` applies it to a fitted model and a GPU link's.

    Examples
    --------
    >>> round(crossover(4, 1e9, 1e-6))
    8000
    """
    fixed = allreduce_time('ring', k, 0, bandwidth, latency) - allreduce_time(
        'doubling', k, 0, bandwidth, latency
    )
    per_byte = allreduce_time('doubling', k, 1, bandwidth) - allreduce_time(
        'ring', k, 1, bandwidth
    )
    return fixed / per_byte


def fit_ring(k, t_small, large, t_large):
    """The ring's model fitted to two measured times on ``k`` devices:
    ``(alpha, B)``.

    ``alpha`` from the time ``t_small`` of an array small enough that its
    bytes cost nothing (the time over the ring's ``2 (k-1)`` messages),
    ``B`` from the time ``t_large`` of ``large`` bytes, less those
    messages' ``alpha`` (each device sends ``2 (k-1) N / k`` bytes:
    :func:`allreduce_time`). :doc:`/book/measuring` fits it to this
    machine.

    Returns
    -------
    (float, float)
        Seconds per message and bytes per second; ``B`` is ``inf`` where
        ``alpha`` leaves the bytes no time.

    Examples
    --------
    >>> alpha, bandwidth = fit_ring(4, 6e-6, 2e6, 6e-6 + 3e-3)
    >>> round(alpha * 1e6), round(bandwidth / 1e9)
    (1, 1)
    """
    messages = allreduce_time('ring', k, 0, 1.0, latency=1.0)
    alpha = t_small / messages
    left = t_large - messages * alpha
    sent = allreduce_time('ring', k, large, 1.0)  # bytes each device sends
    return alpha, (sent / left if left > 0 else math.inf)


def busiest_bytes(algorithm, k, nbytes):
    """Bytes the busiest device receives (and as many it sends).

    Taught in :doc:`/book/allreduce-algorithms`; the one statement of
    the textbook counts, which :func:`d2lpar.comm.traffic` must
    reproduce from the schedules (exactly when ``k`` divides the array):

    - naive: ``(k-1) N``, all on device 0;
    - sharded and ring: ``2 (k-1) N / k`` on every device;
    - doubling: ``log2(k) N`` when ``k`` is a power of two, else
      ``(floor(log2 k) + 1) N``, so ``2 N`` for ``k = 3`` (a device
      that folds in another receives one array more, and sends one more
      back).

    Parameters
    ----------
    algorithm : {'naive', 'sharded', 'ring', 'doubling'}
    k : int
        Devices.
    nbytes : float
        Bytes per device's array (N).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For an unknown algorithm (or ``'cpu'``, which is no schedule).
    """
    if algorithm == 'cpu':
        raise ValueError(
            "busiest_bytes: 'cpu' has no schedule here; use "
            "'naive', 'sharded', 'ring' or 'doubling'"
        )
    messages, cut = _pattern(algorithm, k, 'busiest_bytes')
    if algorithm == 'naive':
        return messages / 2 * nbytes  # receives, then sends: no overlap
    if algorithm == 'doubling':
        swaps = k.bit_length() - 1  # a fold and an unfold add one each way
        return (swaps + (k != 1 << swaps)) * nbytes
    return messages * nbytes / cut  # every step sends and receives


def memory_traffic(algorithm, k, nbytes):
    """Bytes read plus written in memory by one allreduce on CPU contexts.

    Taught in :doc:`/book/measuring`. CPU contexts share one
    memory, so a "transfer" is a copy (read N, write N) and an addition
    reads two arrays and writes one. Large allreduces are then bound by
    memory bandwidth, and at the bandwidth one copy reaches their best
    possible speed relative to a plain copy of N bytes (2N of traffic),
    their *ceiling*, is ``2N / memory_traffic``. Several cores working
    at once can move more bytes per second than one copy, as far as the
    memory bus they share allows, so a measurement may pass the ceiling;
    the benchmark's ``'copy+add'`` row is the measured reference
    (:func:`d2lpar.bench.floor_work`):

    - ``'copy'``: ``2N``, the reference.
    - ``'ideal'``: ``2kN``, read every input once and write every output
      once, as a single fused kernel would.
    - ``'naive'``, ``'sharded'``, ``'ring'`` as implemented here:
      ``7 (k-1) N``: ``(k-1) N`` bytes are copied into receive buffers
      (2 each), added (3 each), and copied out again (2 each). The naive
      algorithm moves as much as the ring; it just does it all on one
      device, one operation after another.
    - ``'doubling'``: every device receives and adds the whole array in
      each swap (5 per byte): ``5 k log2(k) N`` when ``k`` is a power of
      two, ``10N`` on two devices against the ring's ``7N``; the fold
      (5) and unfold (2) of the ``r`` devices beyond the power of two
      ``p`` add ``7 r N``.

    Parameters
    ----------
    algorithm : {'copy', 'ideal', 'naive', 'sharded', 'ring', 'doubling'}
    k : int
        Devices.
    nbytes : float
        Bytes per device's array (N).

    Returns
    -------
    float
        Bytes read plus written.

    Raises
    ------
    ValueError
        For an unknown algorithm.
    """
    if algorithm == 'copy':
        return 2 * nbytes
    if algorithm == 'ideal':
        return 2 * k * nbytes
    if algorithm in ('naive', 'sharded', 'ring'):
        return 7 * (k - 1) * nbytes
    if algorithm == 'doubling':
        swaps = k.bit_length() - 1
        p = 1 << swaps
        return (5 * p * swaps + 7 * (k - p)) * nbytes
    raise ValueError(
        f'memory_traffic: unknown algorithm {algorithm!r}; use '
        f"'copy', 'ideal', 'naive', 'sharded', 'ring' or 'doubling'"
    )


# Bytes per step a multi-process job sends over loopback, in units of N:
# one parameter server takes every worker's push and sends every pull
# (2kN); a ring all-reduce sends 2(k-1)N in all. The band around it: fixed
# costs (start-up, rendezvous) vary a little from job to job and leak into
# a difference of two runs (5% below), and each protocol adds its own
# headers and control messages above.
ENGINE_BYTES = {
    'kvstore': (lambda k: 2 * k, 0.95, 1.125),
    'horovod': (lambda k: 2 * (k - 1), 0.95, 1.15),
}


def engine_bytes(engine, workers, nbytes):
    """Loopback bytes per step of a multi-process engine: model and band.

    Taught in :doc:`/book/multiprocess`; the one home of the
    counts its tests and page check measurements against.

    Parameters
    ----------
    engine : {'kvstore', 'horovod'}
    workers : int
    nbytes : float
        The gradients' bytes (N).

    Returns
    -------
    model, low, high : float
        The textbook count, and the band ``low <= measured < high`` a
        measurement must fall in.

    Raises
    ------
    ValueError
        For an unknown engine.
    """
    if engine not in ENGINE_BYTES:
        raise ValueError(
            f'engine_bytes: unknown engine {engine!r}; use '
            f'one of {sorted(ENGINE_BYTES)}'
        )
    count, below, above = ENGINE_BYTES[engine]
    model = count(workers) * nbytes
    return model, below * model, above * model
