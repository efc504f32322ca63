"""How close PyTorch's step comes to the machine, and where it goes.

The twin of the parts of :mod:`d2lpar.bench` that
:doc:`/book/machine-limit` and :doc:`/book/step-profile` show (``dp.bench``
after ``from d2lpar import torch as dp``, imported on first use): the
step's floating-point operations (:func:`lenet_flops`, counted by
PyTorch's own FLOP counter), the rate of a large matrix product
(:func:`matmul_rate`), the step timed on ``k`` devices and ``t`` threads
in interleaved rounds (:func:`compare_steps`), and the step broken into
its phases and operators (:func:`profile_training`, with
``torch.profiler``).

PyTorch has one pool of threads per process (``torch.set_num_threads``,
the intra-op threads every operator splits its work over), not one per
device as MXNet's CPU contexts have: ``k`` CPU devices in one process
run one after the other, each operator on the whole pool
(:mod:`d2lpar.torch.devices`). The pool can be set up and down at any
time, so every setting here runs in this process, its threads set
before it runs and restored after (:func:`threads`). Nothing here
imports MXNet.
"""

import contextlib
import statistics
from time import perf_counter

import torch

from ..bench import memory as _memory
from ..bench.frameworks import _batch, _torch_ops, by_kind, onednn_kernels
from ..bench.profile import format_profile as _format_profile
from ..bench.profile import plot_profile
from ..bench.timing import compare_times, ratio_text, span_text, where_in
from .collectives import allreduce
from .devices import devices as make_devices
from .model import get_params, init_lenet_params, lenet
from .splitting import split_batch
from .training import cross_entropy, sgd, wait_for

__all__ = [
    'compare_allocator',
    'format_allocator',
    'PROFILES',
    'by_kind',
    'compare_steps',
    'compare_times',
    'ratio_text',
    'span_text',
    'where_in',
    'format_profile',
    'kernel_implementations',
    'lenet_flops',
    'matmul_rate',
    'plot_profile',
    'profile_training',
    'products',
    'threads',
    'time_steps',
]


def every_core():
    """The cores this process may run on."""
    import os

    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextlib.contextmanager
def threads(count=None):
    """Run the block with PyTorch's intra-op threads at ``count`` (every
    core when None), then put back the count from before."""
    before = torch.get_num_threads()
    torch.set_num_threads(count or every_core())
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def lenet_flops(batch_size=1, layers=None):
    """Floating-point operations of one LeNet training step, as PyTorch
    counts them.

    The twin of :func:`d2lpar.bench.lenet_flops`, counted another way:
    ``torch.utils.flop_counter.FlopCounterMode`` runs one forward and
    backward pass on shapes only (the ``meta`` device: nothing is
    computed) and adds up the operations of each convolution and matrix
    product it meets, a multiply-add as two. It counts only the gradients
    the pass computes, so the first layer's input gradient, which nobody
    needs, is left out as in the book's count; ReLU, pooling, the loss
    and the update are not counted.

    Parameters
    ----------
    batch_size : int, optional
    layers : {None, 'conv', 'dense'}, optional
        Count only the convolutions or only the dense layers.

    Returns
    -------
    int
    """
    from torch.utils.flop_counter import FlopCounterMode

    meta = torch.device('meta')
    X = torch.empty(batch_size, 1, 28, 28, device=meta)
    y = torch.zeros(batch_size, dtype=torch.long, device=meta)
    params = get_params(init_lenet_params(0, 0.1), meta)
    with FlopCounterMode(display=False) as counter:
        cross_entropy(lenet(X, params), y).sum().backward()
    kinds = {'conv': ('convolution', 'convolution_backward'),
             'dense': ('mm', 'addmm', 'bmm')}  # fmt: skip
    total = 0
    for op, flops in counter.get_flop_counts()['Global'].items():
        name = str(op).split('.')[-1]
        if layers is None or name in kinds[layers]:
            total += flops
    return total


def products(A, B):
    """PyTorch's large matrix product of ``A`` and ``B``, by name:
    ``torch.mm`` (on a CPU, the BLAS PyTorch was built with: MKL in the
    x86 wheels, ``torch.__config__.show()`` says which)."""
    return {'torch.mm': lambda: torch.mm(A, B)}


def _median_seconds(fn, repeats, warmup, wait=lambda: None):
    times = []
    for i in range(warmup + repeats):
        start = perf_counter()
        fn()
        wait()
        if i >= warmup:
            times.append(perf_counter() - start)
    return statistics.median(times)


def matmul_rate(n=1024, repeats=7, count=None, device='cpu'):
    """GFLOP/s of :func:`products` on ``count`` threads (every core when
    None): ``2 n**3`` operations over the median of ``repeats`` products.
    """
    device = torch.device(device)
    A = torch.ones(n, n, device=device)
    B = torch.ones(n, n, device=device)
    with threads(count):
        return max(
            2 * n**3 / _median_seconds(fn, repeats, 2, wait_for([device]))
            / 1e9
            for fn in products(A, B).values()
        )  # fmt: skip


def _setup(num_devices, batch_size):
    X, y = (torch.from_numpy(a) for a in _batch(batch_size))
    devices = make_devices(num_devices)
    params = init_lenet_params(0, 0.1)
    return X, y.long(), devices, [get_params(params, d) for d in devices]


def time_steps(num_devices, batch_size=256, repeats=6, warmup=2,
               count=None):  # fmt: skip
    """Median seconds of one step of :func:`d2lpar.torch.train_batch`.

    The twin of :func:`d2lpar.bench.time_steps`: ``num_devices`` devices
    of :func:`d2lpar.torch.devices`, one minibatch of random images in
    memory, ``count`` threads (every core when None), each step ended by
    waiting for the devices.
    """
    from .training import train_batch

    X, y, devices, device_params = _setup(num_devices, batch_size)
    with threads(count):
        return _median_seconds(
            lambda: train_batch(X, y, device_params, devices, 0.1),
            repeats, warmup, wait_for(devices),
        )  # fmt: skip


def compare_steps(settings, rounds=3, repeats=6, warmup=2, batch_size=256):
    """Several settings of the step, timed in interleaved rounds.

    Parameters
    ----------
    settings : dict of label to tuple
        ``label: (devices, threads)`` or ``label: (devices, threads,
        batch)`` (threads None: every core; batch left out:
        ``batch_size``). The label only names the row: a setting's batch
        is its third entry, so two batch sizes are two 3-tuples.
    rounds, repeats, warmup, batch_size : int, optional
        In each round every setting is timed once (:func:`time_steps`),
        in the given order in even rounds and reversed in odd ones.

    Returns
    -------
    dict of label to list of float
        Per label, ms per step, one per round.
    """
    ms = {label: [] for label in settings}
    for r in range(rounds):
        for label in list(settings)[:: -1 if r % 2 else 1]:
            k, count, *batch = settings[label]
            seconds = time_steps(
                k, batch[0] if batch else batch_size, repeats, warmup, count
            )
            ms[label].append(1000 * seconds)
    return ms


# (label, devices, threads): one thread, then every core on 1 and 2
# devices, as d2lpar.bench.PROFILES.
PROFILES = (
    ('1 device, 1 thread', 1, 1),
    ('1 device, all cores', 1, None),
    ('2 devices', 2, None),
)


def _phases(num_devices, count, batch_size, steps):
    """One setting: plain and phased steps in turn, then profiled ones."""
    X, y, devices, params = _setup(num_devices, batch_size)
    wait = wait_for(devices)
    phases = {p: [] for p in ('forward', 'backward', 'allreduce', 'update')}

    def forward():
        for W in params:  # PyTorch adds to .grad (as train_batch)
            for p in W:
                p.grad.zero_()
        Xs, ys = split_batch(X, y, devices)
        return [cross_entropy(lenet(a, W), b).sum()
                for a, b, W in zip(Xs, ys, params)]  # fmt: skip

    def step(sync):
        def run(name, fn):
            start = perf_counter()
            out = fn()
            if sync:
                wait()  # nothing is queued on a CPU; a GPU's queue
                phases[name].append(1000 * (perf_counter() - start))
            return out

        ls = run('forward', forward)
        run('backward', lambda: [l.backward() for l in ls])
        run('allreduce', lambda: [allreduce([W[i].grad for W in params])
                                  for i in range(len(params[0]))])  # fmt: skip
        run('update', lambda: [sgd(W, 0.1, batch_size) for W in params])

    with threads(count) as used:
        for _ in range(3):  # warm-up: memory, oneDNN's kernels
            step(False)
        wait()
        step_times, queue_times = [], []
        for _ in range(steps):  # the plain and the phased step in turn
            start = perf_counter()
            step(False)
            queued = perf_counter()
            wait()
            step_times.append(1000 * (perf_counter() - start))
            queue_times.append(1000 * (queued - start))
            step(True)
        operators, profiled_ms = _torch_ops(lambda: step(False), wait, steps)
        own = (
            matmul_rate(repeats=3, count=used) if used < every_core() else None
        )
    result = dict(
        step_ms=statistics.median(step_times),
        step_times=step_times,
        queue_ms=statistics.median(queue_times),
        phase_sums=[sum(t) for t in zip(*phases.values())],
        profiled_ms=profiled_ms,
        threads=[used] * num_devices,
        phases={p: statistics.median(v) for p, v in phases.items()},
        operators=operators,
        gflops=matmul_rate(),
    )
    if own is not None:
        result['gflops_own'] = own
    return result


def profile_training(configs=PROFILES, batch_size=256, steps=5):
    """Phases and operators of one step, as
    :func:`d2lpar.bench.profile_training` gives MXNet's.

    Each setting runs in this process, one after the other, on its own
    threads. The step is :func:`d2lpar.torch.train_batch`'s four phases
    written out (forward with the loss, backward, allreduce, update) on
    one minibatch in memory: ``steps`` plain steps alternate with
    ``steps`` whose phases are each timed; then ``steps`` plain steps run
    under ``torch.profiler``, which times every operator (its self time,
    so that nothing is counted twice: :mod:`d2lpar.bench.frameworks`).

    Parameters
    ----------
    configs : sequence of (str, int, int or None), optional
        ``(label, devices, threads)``; threads None: every core.
    batch_size, steps : int, optional

    Returns
    -------
    dict
        Per label, in order, the keys of
        :func:`d2lpar.bench.profile_training` (``step_ms``,
        ``step_times``, ``queue_ms``, ``phase_sums``, ``profiled_ms``,
        ``threads``, ``phases``, ``operators``, ``waiting``, ``gflops``
        and ``limit_ms``; ``gflops_own`` and ``limit_own_ms`` where the
        setting had fewer threads than the cores). PyTorch computes each
        operator on a CPU before it returns, so there ``queue_ms`` is the
        whole step.
    """
    flops = lenet_flops(batch_size)
    out = {}
    for label, k, count in configs:
        r = _phases(k, count, batch_size, steps)
        r['waiting'] = max(0.0, sum(r['phases'].values()) - r['step_ms'])
        r['limit_ms'] = 1000 * flops / (r['gflops'] * 1e9)
        if 'gflops_own' in r:
            r['limit_own_ms'] = 1000 * flops / (r['gflops_own'] * 1e9)
        out[label] = r
    return out


def format_profile(profile, top=6):
    """:func:`d2lpar.bench.format_profile` for :func:`profile_training`'s
    result, which times its phases one by one with no ``waitall``."""
    return _format_profile(profile, top).replace(
        'with a waitall after each phase', 'phase by phase'
    )


def kernel_implementations(batch_size=256):
    """Which oneDNN kernel ran each of LeNet's layers in a forward and
    backward pass on one CPU device (:func:`d2lpar.bench.onednn_kernels`).

    Returns
    -------
    list of (str, str, str, float)
        ``(primitive, implementation, propagation kind, ms)`` per
        primitive run, e.g. ``('convolution', 'brg_conv_fwd:avx2',
        'forward_training', 0.9)``.
    """
    return onednn_kernels('pytorch', batch_size)[1]


def compare_allocator(rounds=3, steps=20, warmup=5, batch_size=256,
                      timeout=300):  # fmt: skip
    """PyTorch's one-device step with glibc's malloc defaults and with
    freed memory kept: :func:`d2lpar.bench.compare_allocator` for
    ``frameworks=('pytorch',)``."""
    return _memory.compare_allocator(
        ('pytorch',), rounds, steps, warmup, batch_size, timeout
    )


format_allocator = _memory.format_allocator
