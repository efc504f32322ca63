"""Overlapping the gradient allreduce with the backward pass.

The backward pass produces gradients from the last layer to the first.
The last layer's gradient is final long before the first layer's is, so
its allreduce can run while the backward pass still computes. MXNet's
engine does this by itself: every operator waits only for the arrays it
reads, so a copy queued for ``W4.grad`` starts as soon as ``W4.grad`` is
written. What prevents it is Python waiting for *all* the work (a
``npx.waitall()`` between backward and allreduce); ``d2lpar.train_batch``
never waits there, so its step already overlaps. Buckets group gradients
so that fewer, larger transfers run; ordering them last layer first lets
the first bucket start earliest (PyTorch DDP's default bucket is 25 MiB).

A caveat seen in MXNet's profiler (``mx.profiler``, one LeNet step on
two CPU contexts): the backward pass runs as a few ``ImperativeBulk``
engine operations per device, not one operation per layer, so gradients
written in one bulk segment become ready together, which limits how
early a bucket can start.
"""

import functools

import numpy as onp
from mxnet import np, npx

from ..collectives import allreduce
from ..comm.buckets import bucketed_allreduce, make_buckets
from ..model import init_lenet_params, lenet
from ..parameters import get_params
from ..splitting import split_batch
from ..training import (
    cores_per_device,
    cross_entropy,
    device_gradients,
    sgd,
)


@cores_per_device
def train_batch(
    X,
    y,
    device_params,
    devices,
    lr,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
    overlap=True,
    bucket_bytes=None,
    reverse=True,
):
    """One data-parallel SGD step, with or without overlap.

    Taught in :doc:`/book/overlap`. The same result
    as :func:`d2lpar.train_batch`; only when the allreduce may start
    differs. With ``overlap=False`` Python waits for the whole backward
    pass before queueing any communication; with ``overlap=True`` it
    queues everything at once and MXNet's engine starts each bucket's
    allreduce as soon as its gradients are written.

    Parameters
    ----------
    X, y, device_params, devices, lr, net, loss, algorithm
        As for :func:`d2lpar.train_batch`.
    overlap : bool, optional
        Let communication start during the backward pass.
    bucket_bytes : int, optional
        Bucket size for :func:`d2lpar.make_buckets` (None: one per parameter).
    reverse : bool, optional
        Reduce the last layer's gradients first.
    """
    X_shards, y_shards = split_batch(X, y, devices)
    device_gradients(X_shards, y_shards, device_params, net, loss)
    grads = [[p.grad for p in params] for params in device_params]
    if not overlap:
        npx.waitall()  # every gradient finished before any transfer
    sizes = [g.size for g in grads[0]]
    for bucket in make_buckets(sizes, bucket_bytes, reverse):
        if len(bucket) == 1:
            algorithm([g[bucket[0]] for g in grads])
        else:
            bucketed_allreduce(
                [[g[i] for i in bucket] for g in grads], algorithm
            )
    sgd(device_params, lr, X.shape[0])


def time_overlap(
    configs,
    devices,
    batch_size=256,
    repeats=10,
    warmup=2,
    rounds=3,
    seed=0,
    per_round=False,
):
    """Median seconds per step for each configuration, interleaved.

    Taught in :doc:`/book/overlap`. Every round
    times each configuration once (``repeats`` steps each, ended by
    ``npx.waitall()``), so a busy moment of the machine slows one round
    of one configuration rather than the comparison; the order is
    reversed every other round, as in
    :func:`d2lpar.bench.interleaved_runs`, so that no configuration is
    always timed first or last. The fastest round is kept.

    Parameters
    ----------
    configs : dict of str to dict
        Name to keyword arguments of :func:`train_batch`.
    devices : list of mxnet.Context
    batch_size : int, optional
        Images per step, split over ``devices``.
    repeats : int, optional
        Timed steps per configuration and round; the round keeps their
        median.
    warmup : int, optional
        Untimed steps before them, in every round.
    rounds : int, optional
        How many times every configuration is timed, in turn.
    seed : int, optional
        Sets the random images, their labels and the initial parameters.
    per_round : bool, optional
        Return every round's median instead of the fastest, to show the
        spread.

    Returns
    -------
    dict of str to float (or list of float)
        Seconds per step.
    """
    from ..bench.timing import median_seconds

    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    start = init_lenet_params(seed, 0.1)
    best, medians = {}, {name: [] for name in configs}
    order = list(configs.items())
    for r in range(rounds):
        for name, options in order if r % 2 == 0 else order[::-1]:
            device_params = [get_params(start, d) for d in devices]
            median = median_seconds(
                functools.partial(
                    train_batch, X, y, device_params, devices, 0.1, **options
                ),
                repeats,
                warmup,
            )
            best[name] = min(median, best.get(name, median))
            medians[name].append(median)
    return medians if per_round else best


def plot_bucket_sweep(times, title=''):
    """Step time against bucket size, one line per mode.

    Parameters
    ----------
    times : dict of (str, str) to list of float
        ``(mode, bucket label)`` to seconds per step, one per round, as
        :func:`time_overlap` returns with ``per_round=True`` for
        configurations named that way. Labels keep their order.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Mean over rounds, with bars from the fastest to the slowest.
    """
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(label for _, label in times))
    fig, ax = plt.subplots(figsize=(6, 3))
    for i, mode in enumerate(dict.fromkeys(mode for mode, _ in times)):
        xs = [j for j, label in enumerate(labels) if (mode, label) in times]
        ms = [1000 * onp.array(times[mode, labels[j]]) for j in xs]
        mean = onp.array([m.mean() for m in ms])
        err = [mean - [m.min() for m in ms], [m.max() for m in ms] - mean]
        ax.errorbar(
            onp.array(xs) + 0.08 * i,
            mean,
            yerr=err,
            marker='os^'[i % 3],
            # join only neighbouring sizes: a line must not suggest
            # values measured nowhere
            linestyle='-' if xs[-1] - xs[0] == len(xs) - 1 else 'none',
            capsize=3,
            label=mode,
        )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlabel('bucket size (buckets per step)')
    ax.set_ylabel('ms per step')
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


# PyTorch DDP's default bucket limits, in bytes: the first bucket's
# (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES) and every later one's
# (bucket_cap_mb=25).
DDP_FIRST_BUCKET_BYTES = 2**20
DDP_BUCKET_BYTES = 25 * 2**20


def ddp_buckets(
    sizes,
    first_bytes=DDP_FIRST_BUCKET_BYTES,
    bucket_bytes=DDP_BUCKET_BYTES,
    itemsize=4,
):
    """PyTorch DDP's buckets for gradients of ``sizes``, in the order given.

    Taught in :doc:`/book/overlap`. DDP's rule
    (``compute_bucket_assignment_by_size`` in torch's ``reducer.cpp``,
    applied when DDP rebuilds its buckets in the order the gradients
    became ready): add the next gradient to the open bucket, then close
    the bucket once it holds at least its limit, ``first_bytes`` for the
    first bucket and ``bucket_bytes`` for every later one. A bucket so
    includes the gradient that crosses its limit, unlike
    :func:`d2lpar.make_buckets`, whose buckets stay within theirs.

    Parameters
    ----------
    sizes : sequence of int
        Elements of each gradient, in the order they become ready.
    first_bytes : int, optional
        The first bucket's limit, in bytes.
    bucket_bytes : int, optional
        Every later bucket's limit, in bytes.
    itemsize : int, optional
        Bytes per element.

    Returns
    -------
    list of list of int
        Indices into ``sizes``, bucket by bucket.

    Examples
    --------
    >>> ddp_buckets([200_000, 200_000, 200_000])  # 0.76 MiB each
    [[0, 1], [2]]
    """
    buckets, current, used = [], [], 0
    for i, size in enumerate(sizes):
        current.append(i)
        used += size * itemsize
        if used >= (bucket_bytes if buckets else first_bytes):
            buckets.append(current)
            current, used = [], 0
    return buckets + [current] if current else buckets


def resnet50_sizes():
    """Elements of ResNet-50's parameters, in the order DDP sees them ready.

    torchvision's ResNet-50 (He et al., 2016; 25,557,032 parameters)
    registers ``conv1``, ``bn1`` (weight, bias), four stages of 3, 4, 6
    and 3 bottleneck blocks (``conv1``, ``bn1``, ``conv2``, ``bn2``,
    ``conv3``, ``bn3``, then in each stage's first block the
    ``downsample`` convolution and batch norm), and ``fc`` (weight,
    bias). The backward pass finishes them in the reverse order, ``fc``'s
    bias first; that is the list returned.
    """
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    inp = 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for block in range(blocks):
            out = 4 * width
            shapes += [(width, inp, 1, 1), (width,), (width,)]
            shapes += [(width, width, 3, 3), (width,), (width,)]
            shapes += [(out, width, 1, 1), (out,), (out,)]
            if block == 0:
                shapes += [(out, inp, 1, 1), (out,), (out,)]
            inp = out
    shapes += [(1000, 2048), (1000,)]
    return [int(onp.prod(shape)) for shape in shapes[::-1]]


# Copy operators. Not all of a step's copies are the allreduce's: the
# input shard's transfer to device 1 (split_batch) and the updates'
# in-place writes (``p[:] = ...``) are copies too.
COMM_OPS = ('CopyCPU2CPU', 'CopyCPU2GPU', 'CopyGPU2CPU', 'CopyGPU2GPU')


def _profile_child(options, num_devices, batch_size, seed, filename):
    """In a fresh process: one warm-up step, then one profiled step."""
    import json

    import mxnet as mx

    from ..devices import devices as make_devices

    devices = make_devices(num_devices)
    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    device_params = [
        get_params(init_lenet_params(seed, 0.1), d) for d in devices
    ]
    train_batch(X, y, device_params, devices, 0.1, **options)
    npx.waitall()
    mx.profiler.set_config(
        profile_imperative=True,
        profile_api=False,
        profile_memory=False,
        aggregate_stats=False,
        filename=filename,
    )
    mx.profiler.set_state('run')
    train_batch(X, y, device_params, devices, 0.1, **options)
    npx.waitall()
    mx.profiler.set_state('stop')
    mx.profiler.dump(finished=True)  # MXNet profiles once per process
    with open(filename) as f:
        trace = json.load(f)['traceEvents']
    opened, events = {}, []
    for e in trace:
        if e.get('cat') != 'operator' or e['ph'] not in 'BE':
            continue
        key = (e['pid'], e['tid'], e['name'])
        if e['ph'] == 'B':
            opened[key] = e['ts']
        elif key in opened:
            events.append((e['pid'], e['name'], opened.pop(key), e['ts']))
    t0 = min(start for _, _, start, _ in events)
    return [
        (d, name, (s - t0) / 1e3, (t - t0) / 1e3)
        for d, name, s, t in sorted(events, key=lambda e: e[2])
    ]


def profile_step(
    options=None, num_devices=2, batch_size=256, seed=0, timeout=300
):
    """Real timestamps of every engine operator of one step.

    Taught in :doc:`/book/overlap`. Runs one warm-up
    step and one step of :func:`train_batch` under MXNet's
    profiler, in a fresh process (MXNet's profiler writes its file once
    per process).

    Parameters
    ----------
    options : dict, optional
        Keyword arguments of :func:`train_batch`.
    num_devices : int, optional
        How many devices the step runs on (:func:`d2lpar.devices`: GPUs
        where MXNet sees them, else CPU contexts).
    batch_size : int, optional
        Images per step, split over the devices.
    seed : int, optional
        Sets the random images, their labels and the initial parameters.
    timeout : float, optional
        Seconds allowed for the child process.

    Returns
    -------
    list of (int, str, float, float)
        ``(device id, operator name, start ms, end ms)`` for every
        engine operator, times relative to the first one.
    """
    import multiprocessing
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        filename = os.path.join(tmp, 'profile.json')
        ctx = multiprocessing.get_context('spawn')
        with ctx.Pool(1) as pool:
            job = pool.apply_async(
                _profile_child,
                (options or {}, num_devices, batch_size, seed, filename),
            )
            return job.get(timeout)


def comm_overlap(events):
    """Milliseconds of copies (:data:`COMM_OPS`) beside compute.

    Parameters
    ----------
    events : list of (int, str, float, float)
        From :func:`profile_step`.

    Returns
    -------
    tuple of (float, float)
        ``(overlapped, total)``: copy time that coincided with some
        compute operator (on any device), and all copy time, in ms. The
        copies include the input shard's and the updates', not only the
        allreduce's.
    """
    comm = [(s, t) for _, name, s, t in events if name in COMM_OPS]
    compute = [
        (s, t)
        for _, name, s, t in events
        if name not in COMM_OPS and name != 'DeleteVariable'
    ]
    overlapped = 0.0
    for s, t in comm:
        cover = [(max(s, a), min(t, b)) for a, b in compute if a < t and b > s]
        # Merge the covered pieces so parallel compute counts once.
        end = s
        for a, b in sorted(cover):
            if b > end:
                overlapped += b - max(a, end)
                end = b
    return overlapped, sum(t - s for s, t in comm)


def plot_timeline(events, title=''):
    """Draw one step: per device, compute and communication operators.

    Parameters
    ----------
    events : list of (int, str, float, float)
        From :func:`profile_step`.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    devices = sorted({d for d, _, _, _ in events})
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * len(devices)))
    for row, device in enumerate(devices):
        for d, name, s, t in events:
            if d != device or name == 'DeleteVariable':
                continue
            comm = name in COMM_OPS
            ax.broken_barh(
                [(s, max(t - s, 0.05))],
                (row - 0.4 + (0.4 if comm else 0), 0.4),
                color='tab:orange' if comm else 'tab:blue',
            )
    ax.set_yticks(range(len(devices)))
    ax.set_yticklabels([f'device {d}' for d in devices])
    ax.set_xlabel('ms since the first operator')
    ax.set_title(title + ' (blue: compute, orange: copies)', fontsize=9)
    fig.tight_layout()
    return fig
