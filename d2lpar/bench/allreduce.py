"""The allreduce benchmark: ``python -m d2lpar bench allreduce``.

Times every allreduce of the library on k devices for gradient sizes
from 4 KB to 64 MB, beside two *baselines* measured in the same run. The
words below mean one thing each, here and in the chapters:

- **copy**: a plain copy of the same bytes from one device to another
  (:func:`time_copy`). Every ratio (``vs_copy``) is to its time.
- **floor**: the least time the copies and additions any allreduce
  needs can take, measured by doing exactly that work on all devices at
  once with nothing else in between (:func:`time_floor`, the row
  ``'copy+add floor'``). An algorithm's distance to the floor is what
  its own organisation costs.
- **ceiling**: the best ratio to the copy that a count of bytes allows,
  computed, not measured (:func:`d2lpar.costmodel.memory_traffic`).
- **targets**: :data:`TARGETS`, the ratios this benchmark was written
  to reach; :func:`targets` says which are met and, where not, which
  floor or factor stops them.
"""

import csv
import json
import os

import mxnet as mx
from mxnet import np

from ..collectives import allreduce, run_schedule
from ..devices import devices as default_devices
from ..kvstore import kvstore_allreduce
from ..schedules import SCHEDULES, naive_schedule
from .timing import median_seconds


def _scheduled(make):
    return lambda data: run_schedule(data, make(len(data)))


# Every allreduce by name: the chapters, the figures and the tests take
# them from here. The hand-written ones run their schedules, except the
# chapter's naive allreduce itself, which allocates a fresh array for
# every transfer; 'naive (reused)' runs the same transfers through
# run_schedule's reused buffers and so tells the two costs apart.
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
SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20)


def bench_devices(k):
    """``k`` distinct devices to measure on, and a note if they are CPUs.

    :func:`d2lpar.devices` gives ``k`` GPUs, or ``k`` CPU contexts when
    MXNet sees fewer (with a warning). It refuses only when
    ``D2LPAR_DEVICES=gpu`` asks for GPUs that are not there; the
    benchmark then still measures, on ``k`` CPU contexts, and says so.

    Parameters
    ----------
    k : int

    Returns
    -------
    devices : list of mxnet.Context
    note : str or None
        Why CPU contexts stand in, to print; None when none do.
    """
    try:
        return default_devices(k), None
    except (ValueError, RuntimeError) as e:
        devices = [mx.cpu(i) for i in range(k)]
        return devices, (
            f'dp.devices({k}) cannot give {k} devices here '
            f'({e}); measuring on {devices} instead'
        )


def time_allreduce(algorithm, devices, nbytes, repeats=10, warmup=2):
    """Median seconds of ``algorithm`` on float32 arrays of ``nbytes``.

    Parameters
    ----------
    algorithm : callable
        An allreduce (``algorithm(data)``, in place).
    devices : list of mxnet.Context
        One array per device.
    nbytes : int
        Bytes per array (a multiple of 4).
    repeats, warmup : int, optional
        Timed and untimed runs; every run ends with ``npx.waitall()``.

    Returns
    -------
    float
    """
    # Values stay finite however often they are summed: k**12 * 1e-12.
    data = [
        np.full(nbytes // 4, 1e-12, dtype='float32', ctx=d) for d in devices
    ]
    return median_seconds(lambda: algorithm(data), repeats, warmup)


def time_copy(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of a plain copy of ``nbytes`` between two devices.

    The *copy*, the reference every ratio is to: even a perfect
    allreduce must read and write every byte at least once.

    Parameters
    ----------
    devices : list of mxnet.Context
        The copy goes from ``devices[0]`` to ``devices[1]`` (or to
        itself with one device).
    nbytes, repeats, warmup : int

    Returns
    -------
    float
    """
    src = np.ones(nbytes // 4, dtype='float32', ctx=devices[0])
    dst = np.zeros(nbytes // 4, dtype='float32', ctx=devices[-1])
    return median_seconds(lambda: src.copyto(dst), repeats, warmup)


def time_floor(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of the copies and additions any allreduce needs.

    The *floor* (see the module's docstring).
    However it is organised, an allreduce of ``nbytes`` per device built
    from copies and additions makes each of the k devices receive and add
    ``(k-1)/k`` of an array and receive ``(k-1)/k`` of the result: the
    ring's ``2 (k-1)`` steps. Here every device does exactly that work,
    on chunks of ``1/k`` of the array, all devices at once, with no
    slicing, scheduling or checks. With no more devices than cores that
    is the fastest such an allreduce can be; with more, the order the
    engine picks matters too, and an algorithm may come out ahead.

    Parameters
    ----------
    devices : list of mxnet.Context
        Device ``i`` sends to device ``i + 1`` (the last to the first).
    nbytes, repeats, warmup : int

    Returns
    -------
    float
    """
    k, n = len(devices), max(nbytes // 4 // len(devices), 1)
    receivers = devices[1:] + devices[:1]
    # Tiny values stay finite however often they are added.
    src = [np.full(n, 1e-12, dtype='float32', ctx=d) for d in devices]
    # One receive buffer per step, so no copy waits for the last add.
    bufs = [
        [np.zeros(n, dtype='float32', ctx=d) for d in receivers]
        for _ in range(2 * (k - 1))
    ]
    acc = [np.zeros(n, dtype='float32', ctx=d) for d in receivers]

    def work():
        for step, buf in enumerate(bufs):
            for a, b in zip(src, buf):
                a.copyto(b)
            if step < k - 1:  # reduce-scatter steps also add
                for b, c in zip(buf, acc):
                    c += b

    return median_seconds(work, repeats, warmup)


# Measured beside the algorithms, the copy first: every ratio is to it.
BASELINES = {'copy': time_copy, 'copy+add floor': time_floor}


def lenet_sync(algorithm, devices, bucket=False):
    """A function that sums LeNet's 8 gradients across ``devices``.

    Taught in the chapter on gradient buckets. The gradients are made
    once (tiny values, so repeated sums stay finite); every call of the
    returned function reduces them again.

    Parameters
    ----------
    algorithm : callable
        An allreduce.
    devices : list of mxnet.Context
    bucket : bool, optional
        One call on a packed buffer (:func:`d2lpar.bucketed_allreduce`)
        instead of one call per parameter.

    Returns
    -------
    callable
        Takes no arguments.
    """
    from ..buckets import bucketed_allreduce
    from ..model import LENET_SHAPES

    grads = [
        [
            np.full(shape, 1e-12, dtype='float32', ctx=d)
            for _, shape in LENET_SHAPES
        ]
        for d in devices
    ]
    if bucket:
        return lambda: bucketed_allreduce(grads, algorithm)
    return lambda: [
        algorithm([g[i] for g in grads]) for i in range(len(LENET_SHAPES))
    ]


def time_lenet_sync(algorithm, devices, bucket=False, repeats=20, warmup=3):
    """Median seconds of :func:`lenet_sync`'s function.

    Parameters
    ----------
    algorithm, devices, bucket
        See :func:`lenet_sync`.
    repeats, warmup : int, optional

    Returns
    -------
    float
    """
    return median_seconds(
        lenet_sync(algorithm, devices, bucket), repeats, warmup
    )


def run(
    device_counts=(2, 4),
    sizes=SIZES,
    repeats=10,
    algorithms=None,
    progress=print,
):
    """Measure every algorithm and both baselines for every k and size.

    The devices come from :func:`bench_devices`.

    Parameters
    ----------
    device_counts : sequence of int, optional
    sizes : sequence of int, optional
        Bytes per array.
    repeats : int, optional
    algorithms : dict of str to callable, optional
        Default: :data:`ALGORITHMS`.
    progress : callable or None, optional
        Called with one line per finished measurement.

    Returns
    -------
    list of dict
        Rows ``{'devices', 'bytes', 'algorithm', 'seconds', 'gb_per_s',
        'vs_copy'}``; the copy itself is the row ``'copy'``.
        ``gb_per_s`` is bytes per array / seconds; ``vs_copy`` the ratio of
        that to the copy's. The row ``'copy+add floor'`` is the work any
        allreduce made of copies and additions needs (:func:`time_floor`).
    """
    algorithms = algorithms or ALGORITHMS
    rows = []
    for k in device_counts:
        devices, _ = bench_devices(k)
        for nbytes in sizes:
            timed = [
                (name, fn(devices, nbytes, repeats))
                for name, fn in BASELINES.items()
            ] + [
                (name, time_allreduce(fn, devices, nbytes, repeats))
                for name, fn in algorithms.items()
            ]
            copy = timed[0][1]
            for name, seconds in timed:
                rows.append(
                    {
                        'devices': k,
                        'bytes': nbytes,
                        'algorithm': name,
                        'seconds': seconds,
                        'gb_per_s': nbytes / seconds / 1e9,
                        'vs_copy': copy / seconds,
                    }
                )
                if progress:
                    progress(format_row(rows[-1]))
    return rows


def format_row(row):
    """One table line of a :func:`run` row."""
    return (
        f'{row["devices"]:>3} {row["bytes"] / 2**20:>9.3f} MB '
        f'{row["algorithm"]:>15} {1e3 * row["seconds"]:>10.3f} ms '
        f'{row["gb_per_s"]:>8.2f} GB/s {row["vs_copy"]:>6.2f}x copy'
    )


def save(rows, path):
    """Write rows as JSON (``.json``) or CSV (any other suffix)."""
    with open(path, 'w', newline='') as f:
        if path.endswith('.json'):
            json.dump(rows, f, indent=1)
        else:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


# What the best of 'sharded' and 'ring' should reach from TARGETS_FROM
# bytes up, as a ratio of the other's time to its own: half the copy's
# speed, three times the naive allreduce's, and at least MXNet's own.
TARGETS = {'copy': 0.5, 'naive': 3.0, 'kvstore device': 1.0}
TARGETS_FROM = 16 << 20


def targets(rows, min_bytes=TARGETS_FROM):
    """Check :data:`TARGETS`, and say why a missed one is missed.

    For every device count and size of at least ``min_bytes``, the best
    of ``'sharded'`` and ``'ring'`` is compared with each row named in
    :data:`TARGETS`. Beside the copy ratio stands the floor's own ratio
    (nothing made of copies and additions beats it); the speed-up over
    the naive allreduce is split into what reused buffers give
    (naive / naive (reused)) and what spreading the work gives
    (naive (reused) / best).

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`run`, with every algorithm measured.
    min_bytes : int, optional

    Returns
    -------
    list of str
        One verdict line per comparison, each ending in ``met`` or
        ``missed``.
    """
    lines = []
    for k, nbytes in dict.fromkeys(
        (r['devices'], r['bytes']) for r in rows if r['bytes'] >= min_bytes
    ):
        t = {
            r['algorithm']: r['seconds']
            for r in rows
            if r['devices'] == k and r['bytes'] == nbytes
        }
        best = min(('sharded', 'ring'), key=t.get)
        where = f'k={k} {nbytes / 2**20:.0f} MB: {best}'
        for other, goal in TARGETS.items():
            ratio = t[other] / t[best]
            verdict = 'met' if ratio >= goal else 'missed'
            why = ''
            if other == 'copy':
                why = (
                    f' (the floor itself reached '
                    f'{t[other] / t["copy+add floor"]:.2f}x)'
                )
            elif other == 'naive':
                # Same bytes as the naive one: spreading them over the
                # devices gains at most one factor per core that works.
                cores = min(k, os.cpu_count() or 1)
                why = (
                    f' = {t["naive"] / t["naive (reused)"]:.1f}x from '
                    f'reused buffers * '
                    f'{t["naive (reused)"] / t[best]:.1f}x from spread '
                    f'work (at most {cores}x on {cores} cores)'
                )
            lines.append(
                f'{where} {ratio:.2f}x vs {other}{why}, target '
                f'{goal}x: {verdict}'
            )
    return lines
