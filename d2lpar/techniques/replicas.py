"""Checking that replicas stay identical: checksums and a drift detector.

Data parallelism rests on every replica holding the same bits. A bug (a
device that skipped an update, an allreduce that gives each device a
slightly different sum, statistics kept per device) breaks that silently:
training goes on, each replica on its own path. Comparing a short
checksum of every array across devices every ``N`` steps catches it
early and names the array; only the checksums need to travel.
"""

import collections
import hashlib

Drift = collections.namedtuple('Drift', 'step name groups max_diff')
Drift.__doc__ = (
    'Array ``name`` differs across replicas at ``step``: '
    '``groups`` lists the devices that agree with each other '
    '(one tuple per distinct checksum), ``max_diff`` is the '
    'largest elementwise difference to device 0.'
)


def checksum(a):
    """A short fingerprint of an array's exact bits.

    Parameters
    ----------
    a : mxnet.numpy.ndarray

    Returns
    -------
    str
        16 hex digits of the SHA-256 of its bytes: equal bits give equal
        checksums; any changed bit changes it (with overwhelming
        probability).
    """
    return hashlib.sha256(a.asnumpy().tobytes()).hexdigest()[:16]


def find_drift(device_arrays, names, step=None):
    """Every array whose checksum differs between replicas.

    Taught in :doc:`/book/replicas-in-sync`.

    Parameters
    ----------
    device_arrays : list of list of mxnet.numpy.ndarray
        ``device_arrays[i]`` are replica ``i``'s arrays (parameters,
        running statistics, optimizer state), in the same order.
    names : sequence of str
        One name per array, for the report.
    step : int, optional
        Recorded in the report.

    Returns
    -------
    list of Drift
        Empty when all replicas are bit-identical.

    Raises
    ------
    ValueError
        If the replicas or ``names`` hold different numbers of arrays.
    """
    counts = {len(arrays) for arrays in device_arrays} | {len(names)}
    if len(counts) != 1:
        raise ValueError(
            f'find_drift: replicas hold '
            f'{[len(a) for a in device_arrays]} arrays for '
            f'{len(names)} names; pass one name per array'
        )
    drifts = []
    for i, name in enumerate(names):
        groups = collections.defaultdict(list)
        for d, arrays in enumerate(device_arrays):
            groups[checksum(arrays[i])].append(d)
        if len(groups) > 1:
            first = device_arrays[0][i].asnumpy()
            diff = max(
                abs(arrays[i].asnumpy() - first).max()
                for arrays in device_arrays[1:]
            )
            drifts.append(
                Drift(
                    step,
                    name,
                    sorted(tuple(g) for g in groups.values()),
                    float(diff),
                )
            )
    return drifts


class DriftDetector:
    """Compare the replicas' checksums every ``every`` steps.

    Taught in :doc:`/book/replicas-in-sync`. Call :meth:`check` after
    every step; it does the (costly) comparison only every ``every``
    steps and remembers the first drift it saw.

    Parameters
    ----------
    names : sequence of str
        One name per array of a replica.
    every : int, optional
        Check every this many steps (positive).

    Attributes
    ----------
    first : Drift or None
        The first drift found (its step and array name).
    checked : list of int
        The steps at which a comparison ran.
    """

    def __init__(self, names, every=1):
        if every < 1:
            raise ValueError(f'DriftDetector: every must be >= 1, got {every}')
        self.names, self.every = list(names), every
        self.first, self.checked = None, []

    def check(self, step, device_arrays):
        """Compare the replicas if ``step`` is a multiple of ``every``.

        Parameters
        ----------
        step : int
            The number of steps taken so far.
        device_arrays : list of list of mxnet.numpy.ndarray
            As for :func:`find_drift`.

        Returns
        -------
        list of Drift
            The arrays that differ now (empty if none, or no check ran).
        """
        if step % self.every:
            return []
        self.checked.append(step)
        drifts = find_drift(device_arrays, self.names, step)
        if drifts and self.first is None:
            self.first = drifts[0]
        return drifts
