"""The allreduce benchmark: ``python -m d2lpar bench allreduce``.

Times every allreduce of the library on k devices for gradient sizes
from 4 kB to 64 MB (MB = 10**6 bytes, kB = 10**3), beside two
*baselines* measured in the same run. Every row is timed in interleaved
rounds: each round runs every row once, so a burst of other work slows
one run of several rows, not all runs of one. The words below mean one
thing each, here and in the chapters:

- **copy**: a plain copy of the same bytes from one device to another
  (:func:`time_copy`). Every ratio (``vs_copy``) is to its time.
- **copy+add**: a *reference*, not a bound: the copies and additions
  an allreduce needs, done on all devices at once in a fixed order with
  nothing else in between (:func:`time_floor`, the row
  ``'copy+add'``). It is a measurement too, and an algorithm whose
  operators the engine orders better can beat it.
- **ceiling**: the best ratio to the copy that a count of bytes allows
  at one copy's memory bandwidth, computed, not measured
  (:func:`d2lpar.comm.memory_traffic`).
- **floor**: at ``k = 2`` the sharded and ring allreduces do
  equivalent work; the gap between their times, in rounds whose order
  reverses every other round, is the smallest relative difference stated
  (:func:`allreduce_noise`). :func:`allreduce_verdict` states a
  difference only when it is larger and every run agrees.
- **targets**: :data:`TARGETS`, ratios the command line reports for
  sizes from 16 MB (:func:`allreduce_targets`).
"""

import csv
import json
import os
import statistics

import mxnet as mx
from mxnet import np, npx

from ..comm.algorithms import ALGORITHMS
from ..devices import devices as default_devices
from .timing import compare_times, median_seconds

# Bytes per array; MB means 10**6 bytes in this benchmark and its pages.
ALLREDUCE_SIZES = (4_000, 64_000, 1_000_000, 16_000_000, 64_000_000)


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


def allreduce_work(algorithm, devices, nbytes):
    """A function that runs ``algorithm`` once on arrays of ``nbytes``.

    The arrays are made once, so timing the function times the
    allreduce only; values stay finite however often they are summed
    (``k**12 * 1e-12``).

    Parameters
    ----------
    algorithm : callable
        An allreduce (``algorithm(data)``, in place).
    devices : list of mxnet.Context
        One array per device.
    nbytes : int
        Bytes per array (a multiple of 4).

    Returns
    -------
    callable
        Takes no arguments.
    """
    data = [
        np.full(nbytes // 4, 1e-12, dtype='float32', ctx=d) for d in devices
    ]
    return lambda: algorithm(data)


def time_allreduce(algorithm, devices, nbytes, repeats=10, warmup=2):
    """Median seconds of ``algorithm`` on float32 arrays of ``nbytes``.

    Parameters
    ----------
    algorithm, devices, nbytes
        See :func:`allreduce_work`.
    repeats : int, optional
        Timed runs; every run ends with ``npx.waitall()``.
    warmup : int, optional
        Untimed runs before the first timed one.

    Returns
    -------
    float
    """
    return median_seconds(
        allreduce_work(algorithm, devices, nbytes), repeats, warmup
    )


def copy_work(devices, nbytes):
    """A function that copies ``nbytes`` from one device to another.

    The *copy*, the reference every ratio is to: even a perfect
    allreduce must read and write every byte at least once.

    Parameters
    ----------
    devices : list of mxnet.Context
        The copy goes from ``devices[0]`` to ``devices[-1]`` (or to
        itself with one device).
    nbytes : int

    Returns
    -------
    callable
    """
    src = np.ones(nbytes // 4, dtype='float32', ctx=devices[0])
    dst = np.zeros(nbytes // 4, dtype='float32', ctx=devices[-1])
    return lambda: src.copyto(dst)


def time_copy(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of :func:`copy_work`'s copy.

    Returns
    -------
    float
    """
    return median_seconds(copy_work(devices, nbytes), repeats, warmup)


def floor_work(devices, nbytes):
    """A function doing the copies and additions an allreduce needs.

    The *copy+add* reference (see the module's docstring). However it is
    organised, an allreduce of ``nbytes`` per device built from copies
    and additions makes each of the k devices receive and add ``(k-1)/k``
    of an array and receive ``(k-1)/k`` of the result: the ring's
    ``2 (k-1)`` steps. Here every device does exactly that work, on
    chunks of ``1/k`` of the array, all devices at once, in one fixed
    order, with no slicing, scheduling or checks. It is a reference, not
    a bound: it is measured like any row, and the engine may run an
    algorithm's operators in an order that uses the memory better.

    Parameters
    ----------
    devices : list of mxnet.Context
        Device ``i`` sends to device ``i + 1`` (the last to the first).
    nbytes : int

    Returns
    -------
    callable
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

    return work


def time_floor(devices, nbytes, repeats=10, warmup=2):
    """Median seconds of :func:`floor_work`'s copies and additions.

    Returns
    -------
    float
    """
    return median_seconds(floor_work(devices, nbytes), repeats, warmup)


# Measured beside the algorithms, the copy first: every ratio is to it.
BASELINES = {'copy': copy_work, 'copy+add': floor_work}


def lenet_sync(algorithm, devices, bucket=False):
    """A function that sums LeNet's 8 gradients across ``devices``.

    Taught in :doc:`/book/buckets`. The gradients are made
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
    from ..comm.buckets import bucketed_allreduce
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
    repeats : int, optional
        Timed runs, whose median is returned.
    warmup : int, optional
        Untimed runs before the first timed one.

    Returns
    -------
    float
    """
    return median_seconds(
        lenet_sync(algorithm, devices, bucket), repeats, warmup
    )


def interleaved_runs(fns, rounds, repeats=1, warmup=2):
    """Time several functions in interleaved rounds; keep every round.

    First every function runs ``warmup`` times untimed; then each of
    ``rounds`` rounds times every function in turn (the median of
    ``repeats`` runs), in the given order in even rounds and reversed in
    odd ones, so that no function always runs first or right after the
    same neighbour. A burst of other work on the machine then slows one
    round of several functions, not every round of one, and the spread
    of each function's rounds shows how far a comparison can be trusted
    (:func:`d2lpar.bench.compare_times`).

    Parameters
    ----------
    fns : dict of str to callable
        The functions to time, each taking no arguments.
    rounds : int
        How many rounds; each times every function once.
    repeats : int, optional
        Timed runs per function and round; their median is the round's
        time.
    warmup : int, optional
        Untimed runs of each function before the first round.

    Returns
    -------
    dict of str to list of float
        Seconds per call in each round, under the same keys.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    npx.waitall()
    runs = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        for name, fn in order if r % 2 == 0 else order[::-1]:
            runs[name].append(median_seconds(fn, repeats, 0))
    return runs


def measure_allreduce(
    device_counts=(2, 4),
    sizes=ALLREDUCE_SIZES,
    repeats=10,
    algorithms=None,
    progress=print,
    warmup=2,
):
    """Measure every algorithm and both baselines for every k and size.

    The devices come from :func:`bench_devices`. For each k and size,
    every row first runs ``warmup`` times untimed; then ``repeats``
    rounds each time every row once, in turn. The rounds are interleaved
    so that a burst of other work on the machine slows one run of
    several rows rather than every run of one row.

    Parameters
    ----------
    device_counts : sequence of int, optional
    sizes : sequence of int, optional
        Bytes per array (multiples of 4).
    repeats : int, optional
        Rounds, i.e. timed runs per row.
    algorithms : dict of str to callable, optional
        Default: :data:`ALGORITHMS`.
    progress : callable or None, optional
        Called with one line per finished measurement.
    warmup : int, optional

    Returns
    -------
    list of dict
        Rows ``{'devices', 'bytes', 'algorithm', 'seconds', 'runs',
        'gb_per_s', 'vs_copy'}``; the copy itself is the row ``'copy'``.
        ``runs`` are the seconds of each round, ``seconds`` their median,
        ``gb_per_s`` bytes per array / seconds, ``vs_copy`` the copy's
        seconds over the row's. The row ``'copy+add'`` is the reference
        of :func:`floor_work`.
    """
    algorithms = algorithms or ALGORITHMS
    rows = []
    for k in device_counts:
        devices, _ = bench_devices(k)
        for nbytes in sizes:
            fns = {
                name: make(devices, nbytes) for name, make in BASELINES.items()
            }
            fns.update(
                (name, allreduce_work(fn, devices, nbytes))
                for name, fn in algorithms.items()
            )
            runs = interleaved_runs(fns, repeats, warmup=warmup)
            copy = statistics.median(runs['copy'])
            for name, times in runs.items():
                seconds = statistics.median(times)
                rows.append(
                    {
                        'devices': k,
                        'bytes': nbytes,
                        'algorithm': name,
                        'seconds': seconds,
                        'runs': times,
                        'gb_per_s': nbytes / seconds / 1e9,
                        'vs_copy': copy / seconds,
                    }
                )
                if progress:
                    progress(format_allreduce_row(rows[-1]))
    return rows


def format_allreduce_row(row):
    """One table line of a :func:`measure_allreduce` row (MB = 10**6 bytes)."""
    return (
        f'{row["devices"]:>3} {row["bytes"] / 1e6:>9.3f} MB '
        f'{row["algorithm"]:>15} {1e3 * row["seconds"]:>10.3f} ms '
        f'{row["gb_per_s"]:>8.2f} GB/s {row["vs_copy"]:>6.2f}x copy'
    )


def size_label(nbytes):
    """A size as the pages write it: ``'4 kB'`` below 1 MB, else ``'64 MB'``.

    kB = 10**3 bytes, MB = 10**6 bytes; ``:g`` drops trailing zeros.
    """
    if nbytes < 1e6:
        return f'{nbytes / 1e3:g} kB'
    return f'{nbytes / 1e6:g} MB'


def find_allreduce_row(rows, k, nbytes, name):
    """The row of :func:`measure_allreduce` for ``k`` devices, ``nbytes`` and ``name``.

    Raises
    ------
    KeyError
        If no row matches.
    """
    for r in rows:
        if (r['devices'], r['bytes'], r['algorithm']) == (k, nbytes, name):
            return r
    raise KeyError(f'no row for k={k}, {nbytes} bytes, {name!r}')


def allreduce_noise(rows, nbytes, k=2):
    """The smallest relative gap the benchmark states at one size.

    On two devices the sharded and the ring allreduce make the same
    transfers (each device sends half the array, adds, sends the summed
    half back); they differ in which half each device reduces. The
    rounds run the rows in the table's order and its reverse in turn
    (:func:`interleaved_runs`), so the gap between their median times
    mixes the machine's noise with whatever effect of a row's place in
    the round the alternation leaves.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`measure_allreduce`, with ``'sharded'`` and ``'ring'``
        measured on ``k`` devices at ``nbytes``.
    nbytes : int
    k : int, optional
        2: the device count where the two do equivalent work.

    Returns
    -------
    float
        ``slower / faster - 1`` of the two medians, e.g. 0.2 for 20%.
    """
    a = find_allreduce_row(rows, k, nbytes, 'sharded')['seconds']
    b = find_allreduce_row(rows, k, nbytes, 'ring')['seconds']
    return max(a, b) / min(a, b) - 1


def allreduce_verdict(rows, k, nbytes, a, b, floor):
    """How row ``a`` compared with row ``b``, only beyond the floor.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`measure_allreduce`.
    k : int
        The device count of the measurement.
    nbytes : int
        The array size of the measurement, in bytes.
    a : str
        A row name, e.g. ``'ring'``.
    b : str
        The row it is compared with, e.g. ``'naive'``.
    floor : float
        The smallest relative gap stated (:func:`allreduce_noise`).

    Returns
    -------
    str
        ``'faster than'`` or ``'slower than'`` only when every run of
        one is below every run of the other (:func:`compare_times`) *and*
        the medians differ by more than ``floor``; otherwise ``'not
        clearly different from'``.
    """
    return judge(
        find_allreduce_row(rows, k, nbytes, a)['runs'],
        find_allreduce_row(rows, k, nbytes, b)['runs'],
        floor,
    )


def judge(a, b, floor=0.0):
    """How timings ``a`` compare with timings ``b``, beyond a floor.

    Parameters
    ----------
    a : sequence of float
        Seconds of each round of one setting.
    b : sequence of float
        Seconds of each round of the setting it is compared with.
    floor : float, optional
        The smallest relative gap stated (:func:`allreduce_noise`).

    Returns
    -------
    str
        ``'faster than'`` or ``'slower than'`` when every time of one
        is below every time of the other
        (:func:`d2lpar.bench.compare_times`) and their medians
        differ by more than ``floor``; else ``'not clearly different
        from'``.
    """
    ma, mb = statistics.median(a), statistics.median(b)
    if max(ma, mb) / min(ma, mb) <= 1 + floor:
        return 'not clearly different from'
    return compare_times(a, b)


def save_allreduce_rows(rows, path):
    """Write rows as JSON (``.json``) or CSV (any other suffix)."""
    with open(path, 'w', newline='') as f:
        if path.endswith('.json'):
            json.dump(rows, f, indent=1)
        else:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


# Ratios the command line reports for the ring from TARGETS_FROM bytes
# up: the other row's time over the ring's.
TARGETS = {'copy': 0.5, 'naive': 3.0, 'kvstore device': 1.0}
TARGETS_FROM = 16_000_000


def allreduce_targets(rows, min_bytes=TARGETS_FROM):
    """Check :data:`TARGETS` for the ring, with what explains a miss.

    For every device count and size of at least ``min_bytes``, the ring
    is compared with each row named in :data:`TARGETS` (the ring, not
    the faster of ring and sharded: on two devices those two do the same
    work, and picking the faster would pick noise). Beside the copy
    ratio stands the copy+add reference's own ratio; the speed-up over
    the naive allreduce is split into what reused buffers give
    (naive / naive (reused)) and what spreading the work gives
    (naive (reused) / ring).

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`measure_allreduce`, with every algorithm measured.
    min_bytes : int, optional

    Returns
    -------
    list of str
        One line per comparison, each ending in ``met`` or ``missed``.
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
        where = f'k={k} {nbytes / 1e6:.0f} MB: ring'
        for other, goal in TARGETS.items():
            ratio = t[other] / t['ring']
            verdict = 'met' if ratio >= goal else 'missed'
            why = ''
            if other == 'copy':
                why = (
                    f' (the copy+add reference reached '
                    f'{t[other] / t["copy+add"]:.2f}x)'
                )
            elif other == 'naive':
                # Same bytes as the naive one: spreading them over the
                # devices gains at most one factor per core that works.
                cores = min(k, os.cpu_count() or 1)
                why = (
                    f' = {t["naive"] / t["naive (reused)"]:.1f}x from '
                    f'reused buffers * '
                    f'{t["naive (reused)"] / t["ring"]:.1f}x from spread '
                    f'work (at most {cores}x on {cores} cores)'
                )
            lines.append(
                f'{where} {ratio:.2f}x vs {other}{why}, target '
                f'{goal}x: {verdict}'
            )
    return lines
