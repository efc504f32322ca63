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
