"""The allreduce benchmark: ``python -m d2lpar bench allreduce``.

Times every allreduce of the library on k devices for gradient sizes
from 4 KB to 64 MB, next to the physical limits measured in the same run:
a plain copy of the same bytes from one device to another, and the
copies and additions any allreduce needs, run on all devices at once.
"""
import csv
import json
import os
import statistics
import time

from mxnet import np, npx

from ..collectives import (allreduce, ring_allreduce, run_schedule,
                          sharded_allreduce)
from ..devices import devices as default_devices
from ..kvstore import kvstore_allreduce
from ..schedules import naive_schedule

ALGORITHMS = {
    'naive': allreduce,
    # The naive algorithm's very transfers, through reused receive
    # buffers: tells what its bytes cost from what fresh memory costs.
    'naive (reused)': lambda data: run_schedule(
        data, naive_schedule(len(data))),
    'sharded': sharded_allreduce,
    'ring': ring_allreduce,
    'kvstore device': kvstore_allreduce,
    'kvstore local': lambda data: kvstore_allreduce(data, 'local'),
}
SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20)


def _median_seconds(fn, repeats, warmup):
    times = []
    for i in range(warmup + repeats):
        npx.waitall()
        start = time.perf_counter()
        fn()
        npx.waitall()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    data = [np.full(nbytes // 4, 1e-12, dtype='float32', ctx=d)
            for d in devices]
    return _median_seconds(lambda: algorithm(data), repeats, warmup)


def time_copy(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of a plain copy of ``nbytes`` between two devices.

    The physical limit an allreduce is compared with: even a perfect
    one must read and write every byte at least once.

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
    return _median_seconds(lambda: src.copyto(dst), repeats, warmup)


def time_floor(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of the copies and additions any allreduce needs.

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
    bufs = [[np.zeros(n, dtype='float32', ctx=d) for d in receivers]
            for _ in range(2 * (k - 1))]
    acc = [np.zeros(n, dtype='float32', ctx=d) for d in receivers]

    def work():
        for step, buf in enumerate(bufs):
            for a, b in zip(src, buf):
                a.copyto(b)
            if step < k - 1:  # reduce-scatter steps also add
                for b, c in zip(buf, acc):
                    c += b
    return _median_seconds(work, repeats, warmup)


# Measured beside the algorithms, the copy first: every ratio is to it.
LIMITS = {'copy (limit)': time_copy, 'copy+add floor': time_floor}


def time_lenet_sync(algorithm, devices, bucket=False, repeats=20,
                    warmup=3):
    """Median seconds to sum LeNet's 8 gradients across ``devices``.

    Parameters
    ----------
    algorithm : callable
        An allreduce.
    devices : list of mxnet.Context
    bucket : bool, optional
        One call on a packed buffer (:func:`d2lpar.bucketed_allreduce`)
        instead of one call per parameter.
    repeats, warmup : int, optional

    Returns
    -------
    float
    """
    from ..buckets import bucketed_allreduce
    from ..model import LENET_SHAPES
    grads = [[np.full(shape, 1e-12, dtype='float32', ctx=d)
              for _, shape in LENET_SHAPES] for d in devices]
    if bucket:
        sync = lambda: bucketed_allreduce(grads, algorithm)  # noqa: E731
    else:
        sync = lambda: [algorithm([g[i] for g in grads])  # noqa: E731
                        for i in range(len(LENET_SHAPES))]
    return _median_seconds(sync, repeats, warmup)


def run(device_counts=(2, 4), sizes=SIZES, repeats=10, algorithms=None,
        progress=print):
    """Measure every algorithm and the copy limit for every k and size.

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
        'vs_copy'}``; the copy itself is the row ``'copy (limit)'``.
        ``gb_per_s`` is bytes per array / seconds; ``vs_copy`` the ratio of
        that to the copy's. The row ``'copy+add floor'`` is the work any
        allreduce made of copies and additions needs (:func:`time_floor`).
    """
    algorithms = algorithms or ALGORITHMS
    rows = []
    for k in device_counts:
        devices = default_devices(k)
        for nbytes in sizes:
            timed = [(name, fn(devices, nbytes, repeats))
                     for name, fn in LIMITS.items()] + [
                (name, time_allreduce(fn, devices, nbytes, repeats))
                for name, fn in algorithms.items()]
            limit = timed[0][1]
            for name, seconds in timed:
                rows.append(dict(devices=k, bytes=nbytes, algorithm=name,
                                 seconds=seconds,
                                 gb_per_s=nbytes / seconds / 1e9,
                                 vs_copy=limit / seconds))
                if progress:
                    progress(format_row(rows[-1]))
    return rows


def format_row(row):
    """One table line of a :func:`run` row."""
    return (f'{row["devices"]:>3} {row["bytes"] / 2**20:>9.3f} MB '
            f'{row["algorithm"]:>15} {1e3 * row["seconds"]:>10.3f} ms '
            f'{row["gb_per_s"]:>8.2f} GB/s {row["vs_copy"]:>6.2f}x copy')


def save(rows, path):
    """Write rows as JSON (``.json``) or CSV (any other suffix)."""
    with open(path, 'w', newline='') as f:
        if path.endswith('.json'):
            json.dump(rows, f, indent=1)
        else:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


# The targets for the best spreading algorithm at 16-64 MB.
TARGETS = {'copy (limit)': 0.5, 'naive': 3.0, 'kvstore device': 1.0}


def targets(rows, min_bytes=16 << 20):
    """Check the benchmark's targets, and say why a missed one is missed.

    For every device count and size of at least ``min_bytes``, the best
    of ``'sharded'`` and ``'ring'`` is compared with the copy (target
    0.5x its speed), the naive allreduce (3x faster) and kvstore
    ``'device'`` (at least as fast). Beside the copy ratio stands the
    ceiling the ``'copy+add floor'`` row sets (:func:`time_floor`);
    the speed-up over the naive one is split into what reused buffers
    give (naive / naive (reused)) and what spreading the work gives
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
    for k, nbytes in dict.fromkeys((r['devices'], r['bytes'])
                                   for r in rows if r['bytes'] >= min_bytes):
        t = {r['algorithm']: r['seconds'] for r in rows
             if r['devices'] == k and r['bytes'] == nbytes}
        best = min(('sharded', 'ring'), key=t.get)
        where = f'k={k} {nbytes / 2**20:.0f} MB: {best}'
        for other, goal in TARGETS.items():
            ratio = t[other] / t[best]
            verdict = 'met' if ratio >= goal else 'missed'
            why = ''
            if other == 'copy (limit)':
                why = (f' (the copies and additions it cannot avoid, '
                       f'alone on all devices at once: '
                       f'{t[other] / t["copy+add floor"]:.2f}x)')
            elif other == 'naive':
                # Same bytes as the naive one: spreading them over the
                # devices gains at most one factor per core that works.
                cores = min(k, os.cpu_count() or 1)
                why = (f' = {t["naive"] / t["naive (reused)"]:.1f}x from '
                       f'reused buffers * '
                       f'{t["naive (reused)"] / t[best]:.1f}x from spread '
                       f'work (at most {cores}x on {cores} cores)')
            lines.append(f'{where} {ratio:.2f}x vs {other}{why}, target '
                         f'{goal}x: {verdict}')
    return lines
