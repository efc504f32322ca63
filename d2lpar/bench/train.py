"""Training speed against the machine's limit: ``python -m d2lpar bench train``.

Two ways to train LeNet on Fashion-MNIST are timed side by side, each
for 1, 2 and 4 devices, in a fresh process per way and round:

- ``d2l``: the way d2l's chapter trains, written here in this project's
  own code: d2l's DataLoader with its worker processes, d2l's
  copy-to-the-first-device allreduce, a ``npx.waitall()`` after every
  step, and MXNet's defaults (a scratch pool of 4 buffers, one thread
  per device).
- ``d2lpar``: :func:`d2lpar.train`, the library's default path (its
  in-memory data pipeline, scratch pool, thread budget, and a loop that
  never waits for a step before queueing the next).

Beside each row stands the limit: the step's floating-point operations,
counted from LeNet's shapes, divided by the rate a large matrix product
reaches on all of this machine's cores (measured in the same run). No
step on this machine can be faster than that.

``profile`` breaks one step of the library's path into its phases by
ending each with ``npx.waitall()`` (explicit synchronisation points),
and times each kind of operator with MXNet's profiler.
"""

import os
import statistics

from .step import _in_fresh_process, in_fresh_process_each, round_order
from .timing import compare_times

PATHS = ('d2l', 'd2lpar')
# The CPU context the matrix product's rate is measured on: one no
# benchmark trains on, so its worker can be given every core first.
RATE_CONTEXT = 31
# d2l.get_dataloader_workers() on Linux: the processes d2l's loader starts.
D2L_LOADER_WORKERS = 4


def lenet_flops(batch_size=1, layers=None):
    """Floating-point operations of one LeNet training step.

    Counted from :data:`d2lpar.LENET_SHAPES` and the 28x28 input: a
    multiply-add is 2 operations; the forward pass does every layer's
    products once; the backward pass does them twice (the gradient with
    respect to the weights and the one with respect to the layer's
    input), except the input gradient of the first layer, which nobody
    needs. Element-wise operations (ReLU, pooling, the loss, the update)
    are left out: they are memory-bound and small in operation count.

    Parameters
    ----------
    batch_size : int, optional
    layers : {None, 'conv', 'dense'}, optional
        Count only the convolutions or only the dense layers.

    Returns
    -------
    float
        Operations for ``batch_size`` examples, forward and backward.
    """
    from ..model import LENET_SHAPES

    side, total, first = 28, 0, True
    for name, shape in LENET_SHAPES:
        if not name.startswith('W'):
            continue
        conv = len(shape) == 4
        if conv:  # convolution, then 2x2 pooling (lenet())
            out_ch, in_ch, kh, kw = shape
            side = side - kh + 1
            macs = out_ch * in_ch * kh * kw * side * side
            side //= 2
        else:
            macs = shape[0] * shape[1]
        passes = 2 if first else 3  # forward, weight grad, input grad
        first = False
        if layers is None or layers == ('conv' if conv else 'dense'):
            total += 2 * passes * macs
    return batch_size * total


def matmul_rate(n=1024, repeats=7, ctx=None):
    """GFLOP/s of an ``n x n`` matrix product in this process.

    Run it on a context whose worker uses the cores to count: cpu(0) in a
    process started with ``OMP_NUM_THREADS`` set (:func:`machine_limit`),
    or a context given every core before it ran anything (``ctx``, as
    :func:`compare_training` does).
    """
    from mxnet import np, npx

    from .timing import median_seconds

    A = np.ones((n, n), dtype='float32', ctx=ctx or npx.cpu(0))
    seconds = median_seconds(lambda: np.dot(A, A), repeats, 2)
    return 2 * n**3 / seconds / 1e9


def machine_limit(cores=None, timeout=120):
    """The matrix-product rate on ``cores`` threads, in a fresh process.

    Returns
    -------
    float
        GFLOP/s.
    """
    from ..threads import available_cores

    cores = cores or available_cores()
    env = {'OMP_NUM_THREADS': str(cores)}
    return _in_fresh_process(env, matmul_rate, (), timeout)


def _measure(what, *args):
    """In a child of :func:`compare_training`: one epoch's seconds
    (``'epoch'``, :func:`_epoch_seconds`'s arguments) or the matrix
    product's rate on every core (``'rate'``)."""
    if what == 'epoch':
        return _epoch_seconds(*args)
    from mxnet import npx

    from ..threads import claim_every_core

    # On a context of its own, given every core before it runs anything:
    # cpu(0) may have trained beside other devices and keeps one thread
    # then (d2lpar.threads), or runs the d2l path at MXNet's default.
    npx.waitall()  # nothing else computes while the product is timed
    ctx = npx.cpu(RATE_CONTEXT)
    claim_every_core(ctx)
    return matmul_rate(ctx=ctx)


def _data(batch_size, steps, loader_workers):
    """``steps + 1`` minibatches of the real data, and one test batch."""
    from mxnet import gluon

    from ..data import find_fashion_mnist, load_fashion_mnist, read_split

    n = batch_size * (steps + 1)
    if not loader_workers:
        train_iter, _ = load_fashion_mnist(batch_size, num_train=n)
        return train_iter
    X, y = read_split(find_fashion_mnist(download=False), 'train')
    dataset = gluon.data.ArrayDataset(X[:n], y[:n])
    return gluon.data.DataLoader(
        dataset, batch_size, shuffle=True, num_workers=loader_workers
    )


def d2l_allreduce(data):
    """d2l's allreduce: sum on the first device, copy the sum back."""
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def d2l_train_batch(X, y, device_params, devices, lr):
    """d2l's chapter step, written here (its allreduce, its split)."""
    from d2l import mxnet as d2l
    from mxnet import autograd, gluon

    from ..model import lenet
    from ..training import cross_entropy

    X_shards = gluon.utils.split_and_load(X, devices)
    y_shards = gluon.utils.split_and_load(y, devices)
    with autograd.record():
        ls = [
            cross_entropy(lenet(X_s, W), y_s)
            for X_s, y_s, W in zip(X_shards, y_shards, device_params)
        ]
    for l in ls:
        l.backward()
    for i in range(len(device_params[0])):
        d2l_allreduce([device_params[c][i].grad for c in range(len(devices))])
    for params in device_params:
        d2l.sgd(params, lr, X.shape[0])


def _epoch_seconds(path, num_devices, batch_size, steps):
    """Seconds of a second pass over ``steps`` batches on ``path``.

    The first pass warms up (memory, operator set-up, loader start).
    """
    from mxnet import npx

    from ..devices import devices as make_devices
    from ..model import init_lenet_params
    from ..parameters import get_params
    from ..training import train

    devices = make_devices(num_devices)
    if path == 'd2lpar':
        data = _data(batch_size, steps, 0)
        result = train(
            devices=devices,
            data=(data, [next(iter(data))]),
            num_epochs=2,
            plot=False,
            verbose=False,
        )
        return result.epoch_seconds[1]
    from time import perf_counter

    from ..threads import mxnet_default_threads, thread_budget

    # MXNet's default for cpu(0), which import d2lpar gave every core.
    thread_budget(devices[:1], per_device=mxnet_default_threads())
    data = _data(batch_size, steps, D2L_LOADER_WORKERS)
    params = [get_params(init_lenet_params(0, 0.1), d) for d in devices]
    for _ in range(2):  # the first pass warms up
        start = perf_counter()
        for X, y in data:
            d2l_train_batch(X, y, params, devices, 0.2)
            npx.waitall()  # as d2l's train loop does after every step
        seconds = perf_counter() - start
    return seconds


def compare_training(
    device_counts=(1, 2, 4),
    paths=PATHS,
    batch_size=256,
    steps=20,
    rounds=3,
    timeout=600,
    progress=None,
):
    """Time each path on each device count, interleaved, in fresh processes.

    Parameters
    ----------
    device_counts : sequence of int, optional
    paths : sequence of str, optional
        Some of :data:`PATHS`.
    batch_size : int, optional
        Examples per step, summed over devices.
    steps : int, optional
        Timed steps per measurement (after as many warm-up steps).
    rounds : int, optional
        Every setting is measured once per round; the median over
        rounds is reported.
    timeout : float, optional
        Seconds allowed for each child process (one per path and round,
        measuring every device count in turn).
    progress : callable, optional
        Called with a line of text after each measurement.

    Returns
    -------
    dict
        ``rows``: per (path, devices) the median ms per step, every
        round's value, the limit in ms (at the median rate) and
        ``ratio``, the median over rounds of each round's ms per step
        over the limit measured in the same child (``ratios``);
        ``flops_per_step``, ``gflops`` (the matrix product's median rate
        on all cores, measured in every child after its steps),
        ``gflops_rounds`` (each child's), ``cores``.
    """
    from ..threads import available_cores

    for path in paths:
        if path not in PATHS:
            raise ValueError(
                f'compare_training: unknown path {path!r}; choose from '
                f'{", ".join(PATHS)}'
            )
    cores = available_cores()
    flops = lenet_flops(batch_size)
    times = {(p, k): [] for p in paths for k in device_counts}
    ratios = {key: [] for key in times}  # over the same child's limit
    rates = []  # the matrix product's rate, once per child
    defaults = {'d2l': {'MXNET_CPU_TEMP_COPY': '4'}, 'd2lpar': {}}
    for r in range(rounds):
        counts = round_order(device_counts, r)
        # The paths alternate too: neither always meets the machine first.
        for path in list(paths)[:: -1 if r % 2 else 1]:
            # One process per path and round, not per setting: the path's
            # start-up settings (the scratch pool) are the same for all
            # device counts, and the thread budget is set per call.
            # The limit's rate is measured in every child, after its
            # steps: this machine's speed drifts over minutes, so a rate
            # measured once, before, can belong to a faster or slower
            # moment than the steps it is compared with.
            *seconds, rate = in_fresh_process_each(
                defaults[path],
                _measure,
                [('epoch', path, k, batch_size, steps) for k in counts]
                + [('rate',)],
                timeout,
            )
            rates.append(rate)
            own_limit = 1000 * flops / (rate * 1e9)
            for k, sec in zip(counts, seconds):
                times[path, k].append(1000 * sec / steps)
                ratios[path, k].append(times[path, k][-1] / own_limit)
                if progress:
                    progress(
                        f'round {r + 1}/{rounds}: {path} on {k} device(s): '
                        f'{times[path, k][-1]:.1f} ms/step, '
                        f'{ratios[path, k][-1]:.2f}x the limit measured '
                        f'in the same process ({rate:.0f} GFLOP/s)'
                    )
    gflops = statistics.median(rates)
    limit_ms = 1000 * flops / (gflops * 1e9)
    rows = []
    for (path, k), values in times.items():
        ms = statistics.median(values)
        rows.append(
            dict(path=path, devices=k, ms_per_step=ms, rounds=values,
                 limit_ms=limit_ms,
                 ratio=statistics.median(ratios[path, k]),
                 ratios=ratios[path, k])
        )  # fmt: skip
    return dict(
        rows=rows,
        flops_per_step=flops,
        gflops=gflops,
        gflops_rounds=rates,
        cores=cores,
        batch_size=batch_size,
    )


def compare_rounds(result, a, b):
    """A verdict on two settings of :func:`compare_training` that every
    round supports.

    Parameters
    ----------
    result : dict
        From :func:`compare_training`.
    a, b : (str, int)
        ``(path, devices)`` of the two settings.

    Returns
    -------
    str
        ``'slower than'`` or ``'faster than'`` when every round of ``a``
        is slower (faster) than every round of ``b``, else ``'not clearly
        different from'`` (the single rounds overlap).
    """
    rounds = {(r['path'], r['devices']): r['rounds'] for r in result['rows']}
    return compare_times(rounds[a], rounds[b])


def _range(result):
    """'3 runs: 110-149' for the rates behind the limit."""
    rates = result.get('gflops_rounds') or [result['gflops']]
    return f'{len(rates)} runs: {min(rates):.0f}-{max(rates):.0f}'


def format_training(result):
    """The table of :func:`compare_training`, with speed-ups."""
    rows = result['rows']
    base = {(r['path'], r['devices']): r['ms_per_step'] for r in rows}
    lines = [
        f'limit: {result["flops_per_step"] / 1e9:.2f} GFLOP per step of '
        f'{result["batch_size"]} examples at {result["gflops"]:.0f} '
        f'GFLOP/s (matrix product on {result["cores"]} cores, median of '
        f'{_range(result)}) = {rows[0]["limit_ms"]:.1f} ms',
        f'{"path":>7} {"devices":>8} {"ms/step":>9} {"x limit":>8} '
        f'{"vs d2l":>7}',
    ]
    for r in rows:
        d2l = base.get(('d2l', r['devices']), float('nan'))
        lines.append(
            f'{r["path"]:>7} {r["devices"]:>8} {r["ms_per_step"]:>9.1f} '
            f'{r["ratio"]:>7.2f}x {d2l / r["ms_per_step"]:>6.2f}x'
        )
    lines.append(
        "x limit: each run's ms/step over the limit measured in the same "
        'process, median over runs'
    )
    return '\n'.join(lines)


def _phases(num_devices, budget, batch_size, steps):
    """In a fresh process: step ms, per-phase and per-operator ms."""
    import tempfile
    from time import perf_counter

    import numpy as onp
    from d2l import mxnet as d2l
    from mxnet import autograd, np, npx, profiler

    import d2lpar as dp

    rng = onp.random.default_rng(0)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    devices = dp.devices(num_devices)
    # Without the budget: MXNet's default of one thread, which cpu(0)
    # had before import d2lpar gave it every core.
    dp.thread_budget(devices, per_device=None if budget else 1)
    params = [dp.get_params(dp.init_lenet_params(0, 0.1), d) for d in devices]
    phases = {p: [] for p in ('forward', 'backward', 'allreduce', 'update')}

    def forward():
        Xs, ys = dp.split_batch(X, y, devices)
        with autograd.record():
            return [
                dp.cross_entropy(dp.lenet(a, W), b).sum()
                for a, b, W in zip(Xs, ys, params)
            ]

    def step(sync):
        def run(name, fn):
            start = perf_counter()
            out = fn()
            if sync:
                npx.waitall()  # the explicit synchronisation point
                phases[name].append(1000 * (perf_counter() - start))
            return out

        ls = run('forward', forward)
        run('backward', lambda: [l.backward() for l in ls])
        grads = [[p.grad for p in W] for W in params]
        run('allreduce', lambda: [dp.allreduce([g[i] for g in grads])
                                  for i in range(len(grads[0]))])  # fmt: skip
        run('update', lambda: [d2l.sgd(W, 0.1, batch_size) for W in params])

    from .timing import median_seconds

    step_ms = 1000 * median_seconds(lambda: step(False), steps, 3)
    for _ in range(steps):
        step(True)
    # Aggregate statistics only; the trace file MXNet insists on naming
    # goes to a temporary folder, not the current one.
    trace = os.path.join(tempfile.mkdtemp(), 'profile.json')
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=trace)
    profiler.set_state('run')
    for _ in range(steps):
        step(False)
    npx.waitall()
    profiler.set_state('stop')
    result = dict(
        step_ms=step_ms,
        threads=[dp.worker_threads(d) for d in devices],
        phases={p: statistics.median(v) for p, v in phases.items()},
        operators=_operator_ms(profiler.dumps(reset=True), steps),
    )
    # The limit's rate, here and now (see compare_training), on a
    # context of its own.
    result['gflops'] = _measure('rate')
    return result


def _operator_ms(table, steps):
    """Milliseconds per step of each operator, from the profiler's table."""
    ops, in_ops = {}, False
    for line in table.splitlines():
        if line.strip() == 'operator':
            in_ops = True
            continue
        fields = line.split()
        if in_ops and len(fields) == 6 and fields[1].isdigit():
            ops[fields[0]] = float(fields[2]) / steps
        elif in_ops and line and not line.startswith(('=', '-', 'Name')):
            if not fields or not fields[-1].replace('.', '').isdigit():
                break
    return dict(sorted(ops.items(), key=lambda kv: -kv[1]))


# What profile_training compares by default: MXNet's one thread per
# device, then the library's budget on 1 and 2 devices.
PROFILES = (
    ('1 device, 1 thread', 1, False),
    ('1 device, all cores', 1, True),
    ('2 devices', 2, True),
)


def profile_training(configs=PROFILES, batch_size=256, steps=10,
                     timeout=600):  # fmt: skip
    """Phases and operators of one step, before and after the budget.

    A configuration without the budget runs in a fresh process of its
    own (MXNet's default of one thread); those with the budget share
    one, measured in turn, fewest devices first. The step is the library's
    (:func:`d2lpar.train_batch`'s four phases, on one minibatch in
    memory). It is timed once as is, and once with every phase (forward
    with the loss, backward, allreduce, update) ended by ``npx.waitall()``,
    an explicit synchronisation point; the synchronised phases add up to
    more than the step by the time the devices then spend waiting for
    Python to queue the next phase (``waiting``). MXNet's profiler times
    every operator of the unsynchronised step.

    Parameters
    ----------
    configs : sequence of (str, int, bool), optional
        ``(label, devices, thread budget on)``.
    batch_size, steps : int, optional
    timeout : float, optional
        Seconds allowed for each child process.

    Returns
    -------
    dict
        In the order of ``configs``, per label: ``step_ms``, ``threads``
        (each device's OpenMP threads when it ran), ``phases`` (median
        ms), ``operators`` (ms per step by operator name, summed over
        devices, largest first), ``waiting`` (ms) and ``gflops`` (the
        matrix product's rate on every core, measured in the same process
        right after) and ``limit_ms`` (the step's FLOPs at that rate).
    """
    # MXNet's default of one thread needs a process the budget never
    # touched; the budgeted settings share one (it sets the threads per
    # step), which saves starting Python and MXNet again.
    groups = [[c] for c in configs if not c[2]]
    # Fewest devices first: a worker's threads only go down within a
    # process (d2lpar.threads), so one device after two would keep one.
    budgeted = sorted((c for c in configs if c[2]), key=lambda c: c[1])
    groups += [budgeted] if budgeted else []
    out = {}
    for group in groups:
        results = in_fresh_process_each(
            {},
            _phases,
            [(k, budget, batch_size, steps) for _, k, budget in group],
            timeout,
        )
        for (label, _, _), result in zip(group, results):
            result['waiting'] = max(
                0.0, sum(result['phases'].values()) - result['step_ms']
            )
            result['limit_ms'] = (
                1000 * lenet_flops(batch_size) / (result['gflops'] * 1e9)
            )
            out[label] = result
    return {label: out[label] for label, _, _ in configs}


def save_json(result, path):
    """Write ``result`` as JSON to ``path`` (folders made); return path."""
    import json

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    return path


def format_profile(profile, top=6):
    """The phases and the costliest operators of each profiled step.

    Prints the ``top`` costliest operators of each step by name and the
    others summed in one line.
    """
    lines = []
    for label, p in profile.items():
        phases = ', '.join(f'{n} {ms:.1f}' for n, ms in p['phases'].items())
        lines.append(
            f'{label}: step {p["step_ms"]:.1f} ms = '
            f'{p["step_ms"] / p["limit_ms"]:.1f}x the limit '
            f'({p["limit_ms"]:.1f} ms at {p["gflops"]:.0f} GFLOP/s, measured '
            f'in the same process); with a waitall after each phase: '
            f'{phases} (ms)'
        )
        ops = list(p['operators'].items())
        for name, ms in ops[:top]:
            lines.append(f'    {name:<28} {ms:7.1f} ms/step')
        # The rest in one line, so that shares of all operators (which
        # the book quotes) can be checked against the printed numbers.
        rest = ops[top:]
        if rest:
            label = f'{len(rest)} other operators'
            ms = sum(ms for _, ms in rest)
            lines.append(f'    {label:<28} {ms:7.1f} ms/step')
    return '\n'.join(lines)


def kernel_implementations(batch_size=256, timeout=120):
    """Which oneDNN kernel runs LeNet's convolutions and poolings here.

    Runs the forward layers once in a fresh process with oneDNN's
    verbose log on (``DNNL_VERBOSE=1``, printed by the C library, so
    the child's output is captured rather than this process's).

    Returns
    -------
    list of (str, str, float)
        ``(primitive, implementation, ms)`` per operator executed, e.g.
        ``('pooling_v2', 'simple_nchw:any', 20.1)``.
    """
    import subprocess
    import sys

    code = (
        'import d2lpar as dp\n'
        'from mxnet import np, npx\n'
        f'X = np.ones(({batch_size}, 1, 28, 28))\n'
        'dp.lenet(X, dp.init_lenet_params()).wait_to_read()\n'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, DNNL_VERBOSE='1', MKLDNN_VERBOSE='1'),
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split(',')
        if line.startswith('dnnl_verbose,exec,cpu') and len(fields) > 5:
            rows.append((fields[3], fields[4], float(fields[-1])))
    return rows


def plot_training(result):
    """Milliseconds per step against devices, both paths, and the limit.

    Parameters
    ----------
    result : dict
        From :func:`compare_training`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3))
    ax = fig.add_subplot()
    for path, marker in zip(PATHS, 'so'):
        rows = [r for r in result['rows'] if r['path'] == path]
        ks = [r['devices'] for r in rows]
        ax.plot(ks, [r['ms_per_step'] for r in rows], marker + '-',
                label=f'{path} (median)')  # fmt: skip
        for r in rows:  # every round, to show the spread
            ax.plot([r['devices']] * len(r['rounds']), r['rounds'], marker,
                    color='grey', alpha=0.4, markersize=3)  # fmt: skip
    limit = result['rows'][0]['limit_ms']
    ax.axhline(limit, color='black', linestyle='--', label='FLOP limit')
    ax.set(xlabel='devices', ylabel='ms per step', ylim=(0, None))
    ax.set_xticks(sorted({r['devices'] for r in result['rows']}))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def operator_label(name):
    """A legend label for an MXNet operator name.

    Matplotlib leaves labels starting with ``_`` out of a legend, and
    MXNet's backward operators are called ``_backward_...``.
    """
    if name.startswith('_backward_'):
        return operator_label(name[len('_backward_') :]) + ' (backward)'
    bare = name.lstrip('_')
    for prefix in ('npx_', 'npi_', 'np_'):
        if bare.startswith(prefix):
            return bare[len(prefix) :]
    return name


def plot_profile(profile, top=5):
    """Stacked bars: each profiled step's costliest operators.

    Parameters
    ----------
    profile : dict
        From :func:`profile_training`.
    top : int, optional
        Operators shown by name (the largest of the first profile); the
        rest are summed as "other".

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    first = next(iter(profile.values()))['operators']
    names = list(first)[:top]
    fig = Figure(figsize=(5.5, 1.2 + 0.5 * len(profile)))
    ax = fig.add_subplot()
    for row, p in enumerate(profile.values()):
        left = 0.0
        ops = p['operators']
        parts = [(n, ops.get(n, 0.0)) for n in names]
        parts.append(('other', sum(ops.values()) - sum(v for _, v in parts)))
        for i, (name, ms) in enumerate(parts):
            ax.barh(row, ms, left=left, color=f'C{i}',
                    label=operator_label(name) if row == 0 else None)  # fmt: skip
            left += ms
    ax.set_yticks(range(len(profile)))
    ax.set_yticklabels(list(profile))
    ax.set_xlabel('operator ms per step, summed over devices')
    ax.legend(fontsize=7, ncol=3, loc='upper center',
              bbox_to_anchor=(0.5, -0.35))  # fmt: skip
    fig.tight_layout()
    return fig
