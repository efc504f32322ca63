"""Overlapping the gradient allreduce with the backward pass.

The backward pass produces gradients from the last layer to the first.
The last layer's gradient is final long before the first layer's is, so
its allreduce can run while the backward pass still computes. MXNet's
engine does this by itself: every operator waits only for the arrays it
reads, so a copy queued for ``W4.grad`` starts as soon as ``W4.grad`` is
written. What prevents it is Python waiting for *all* the work (a
``npx.waitall()`` between backward and allreduce), as a framework
without dependency tracking must. Buckets group gradients so that fewer,
larger transfers run; ordering them last layer first lets the first
bucket start earliest (PyTorch DDP's default bucket is 25 MB).

A caveat seen in MXNet's profiler (``mx.profiler``, one LeNet step on
two CPU contexts): the backward pass runs as a few ``ImperativeBulk``
engine operations per device, not one operation per layer, so gradients
written in one bulk segment become ready together, which limits how
early a bucket can start.
"""
import time

import numpy as onp
from mxnet import np, npx

from .buckets import bucketed_allreduce
from .collectives import allreduce
from .model import init_lenet_params, lenet
from .optim import compute_grads
from .parameters import get_params
from .splitting import split_batch
from .training import cross_entropy


def make_buckets(sizes, bucket_bytes=None, reverse=True, itemsize=4):
    """Group parameter indices into buckets of at most ``bucket_bytes``.

    Parameters
    ----------
    sizes : sequence of int
        Elements of each parameter, in the network's order.
    bucket_bytes : int, optional
        Largest bucket; a parameter larger than that gets a bucket of its
        own. None: one bucket per parameter.
    reverse : bool, optional
        Fill buckets from the last parameter to the first, the order in
        which the backward pass finishes them.
    itemsize : int, optional
        Bytes per element.

    Returns
    -------
    list of list of int
        Every index exactly once.

    Examples
    --------
    >>> make_buckets([10, 10, 100, 10], bucket_bytes=80)
    [[3, 2], [1, 0]]
    """
    order = list(range(len(sizes)))[::-1 if reverse else 1]
    if bucket_bytes is None:
        return [[i] for i in order]
    buckets, current, used = [], [], 0
    for i in order:
        nbytes = sizes[i] * itemsize
        if current and used + nbytes > bucket_bytes:
            buckets.append(current)
            current, used = [], 0
        current.append(i)
        used += nbytes
    return buckets + [current] if current else buckets


def train_batch_overlap(X, y, device_params, devices, lr, net=lenet,
                        loss=cross_entropy, algorithm=allreduce,
                        overlap=True, bucket_bytes=None, reverse=True):
    """One data-parallel SGD step, with or without overlap.

    Taught in the chapter on overlapping communication. The same result
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
        Bucket size for :func:`make_buckets` (None: one per parameter).
    reverse : bool, optional
        Reduce the last layer's gradients first.
    """
    X_shards, y_shards = split_batch(X, y, devices)
    grads = compute_grads(X_shards, y_shards, device_params, net, loss)
    if not overlap:
        npx.waitall()  # every gradient finished before any transfer
    sizes = [g.size for g in grads[0]]
    for bucket in make_buckets(sizes, bucket_bytes, reverse):
        if len(bucket) == 1:
            algorithm([g[bucket[0]] for g in grads])
        else:
            bucketed_allreduce([[g[i] for i in bucket] for g in grads],
                               algorithm)
    for params in device_params:
        for p in params:
            p[:] = p - lr * p.grad / X.shape[0]


def time_overlap(configs, devices, batch_size=256, repeats=10, warmup=2,
                 rounds=3, seed=0):
    """Median seconds per step for each configuration, interleaved.

    Taught in the chapter on overlapping communication. Every round
    times each configuration once (``repeats`` steps each, ended by
    ``npx.waitall()``), so a busy moment of the machine slows one round
    of one configuration rather than the comparison; the fastest round
    is kept.

    Parameters
    ----------
    configs : dict of str to dict
        Name to keyword arguments of :func:`train_batch_overlap`.
    devices : list of mxnet.Context
    batch_size, repeats, warmup, rounds, seed : int, optional

    Returns
    -------
    dict of str to float
        Seconds per step.
    """
    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    start = init_lenet_params(seed, 0.1)
    best = {}
    for _ in range(rounds):
        for name, options in configs.items():
            device_params = [get_params(start, d) for d in devices]
            times = []
            for i in range(warmup + repeats):
                tic = time.perf_counter()
                train_batch_overlap(X, y, device_params, devices, 0.1,
                                    **options)
                npx.waitall()
                if i >= warmup:
                    times.append(time.perf_counter() - tic)
            median = float(onp.median(times))
            best[name] = min(median, best.get(name, median))
    return best
