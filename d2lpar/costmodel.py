"""The alpha-beta cost model of allreduce algorithms.

Sending a message of ``m`` bytes over a link costs ``alpha + m / B``: a
fixed latency ``alpha`` (seconds) plus the bytes over the bandwidth ``B``
(bytes per second). Each device has one link, which can send and receive
at the same time.
"""

# Transfers per phase and the share of the array each one carries:
# (messages on the busiest link per phase, fraction of N per message).
_SHAPES = {
    'naive': lambda k: (k - 1, 1.0),        # root receives k-1 arrays
    'sharded': lambda k: (k - 1, 1.0 / k),  # each device k-1 chunks
    'ring': lambda k: (k - 1, 1.0 / k),     # k-1 steps, one chunk each
    'cpu': lambda k: (k, 1.0),              # all k devices into one host
}


def allreduce_time(algorithm, k, nbytes, bandwidth, latency=0.0):
    """Predicted seconds of one allreduce of ``nbytes`` on ``k`` devices.

    Taught in the chapter on communication. Both phases (reduce and
    broadcast, or reduce-scatter and all-gather) cost the same, and the
    busiest link sets the pace:

    - naive (reduce onto device 0): ``2 (k-1) (alpha + N/B)``
    - cpu (a parameter server on the host, one shared link):
      ``2 k (alpha + N/B)``
    - sharded and ring: ``2 (k-1) (alpha + N/(k B))``

    Parameters
    ----------
    algorithm : {'naive', 'cpu', 'sharded', 'ring'}
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
    if algorithm not in _SHAPES:
        raise ValueError(f'allreduce_time: unknown algorithm {algorithm!r}; '
                         f'use one of {sorted(_SHAPES)}')
    if k == 1:
        return 0.0
    messages, share = _SHAPES[algorithm](k)
    return 2 * messages * (latency + share * nbytes / bandwidth)


def memory_traffic(algorithm, k, nbytes):
    """Bytes read plus written in memory by one allreduce on CPU contexts.

    Taught in the chapter on communication. CPU contexts share one
    memory, so a "transfer" is a copy (read N, write N) and an addition
    reads two arrays and writes one. Large allreduces are then bound by
    memory bandwidth, and at the bandwidth one copy reaches their best
    possible speed relative to a plain copy of N bytes (2N of traffic) is
    ``2N / memory_traffic``. Several cores share one memory bus, so they
    raise this only a little; the benchmark's ``'copy+add floor'``
    measures the real bound (:func:`d2lpar.bench.allreduce.time_floor`):

    - ``'copy'``: ``2N``, the reference.
    - ``'ideal'``: ``2kN``, read every input once and write every output
      once, as a single fused kernel would.
    - ``'naive'``, ``'sharded'``, ``'ring'`` as implemented here:
      ``7 (k-1) N``: ``(k-1) N`` bytes are copied into receive buffers
      (2 each), added (3 each), and copied out again (2 each). The naive
      algorithm moves as much as the ring; it just does it all on one
      device, one operation after another.

    Parameters
    ----------
    algorithm : {'copy', 'ideal', 'naive', 'sharded', 'ring'}
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
    raise ValueError(f'memory_traffic: unknown algorithm {algorithm!r}; '
                     f"use 'copy', 'ideal', 'naive', 'sharded' or 'ring'")
