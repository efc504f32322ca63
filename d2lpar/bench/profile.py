"""Where one training step's time goes: phases, operators, threads.

:func:`profile_training` breaks one step of the library's path into its
phases by ending each with ``npx.waitall()`` (explicit synchronisation
points), and times each kind of operator with MXNet's profiler; each
profile stands beside the machine's limit (:mod:`d2lpar.bench.limit`)
measured in the same process.
"""

import os
import statistics

from .limit import lenet_flops, matmul_rate, rate_on_every_core
from .step import in_fresh_process_each


def _phases(num_devices, budget, batch_size, steps):
    """In a fresh process: step ms, per-phase and per-operator ms."""
    import tempfile
    from time import perf_counter

    import numpy as onp
    from mxnet import autograd, np, npx, profiler

    import d2lpar as dp

    from .. import _d2l as d2l

    rng = onp.random.default_rng(0)
    X = np.array(rng.uniform(size=(batch_size, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch_size), dtype='int32')
    devices = dp.devices(num_devices)
    # Without the budget: one thread, MXNet's default on a 2-core x86
    # machine (half the processors; d2lpar.threads), which cpu(0)
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

    for _ in range(3):  # warm-up: memory, oneDNN's operators
        step(False)
    # The step as is and the step with its phases synchronised alternate,
    # so that the machine's drift over time touches both alike (timed one
    # block after the other, the phases once added up to less than the
    # step, which a synchronised step cannot do). The plain step is timed
    # as seconds_each times it (waitall, run, waitall); the moment Python
    # has queued the whole step is noted in between.
    step_times, queue_times = [], []
    for _ in range(steps):
        npx.waitall()
        start = perf_counter()
        step(False)
        queued = perf_counter()
        npx.waitall()
        step_times.append(1000 * (perf_counter() - start))
        queue_times.append(1000 * (queued - start))
        step(True)
    # Aggregate statistics only; the trace file MXNet insists on naming
    # goes to a temporary folder, not the current one.
    trace = os.path.join(tempfile.mkdtemp(), 'profile.json')
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=trace)
    profiler.set_state('run')
    start = perf_counter()
    for _ in range(steps):
        step(False)
    npx.waitall()
    profiled_ms = 1000 * (perf_counter() - start) / steps
    profiler.set_state('stop')
    result = dict(
        step_ms=statistics.median(step_times),
        step_times=step_times,
        queue_ms=statistics.median(queue_times),
        # Each synchronised step's phases added up, in the order run.
        phase_sums=[sum(t) for t in zip(*phases.values())],
        profiled_ms=profiled_ms,
        threads=[dp.worker_threads(d) for d in devices],
        phases={p: statistics.median(v) for p, v in phases.items()},
        operators=_operator_ms(profiler.dumps(reset=True), steps),
    )
    # The limit's rate, here and now (see bench.train.compare_training), on a
    # context of its own given every core.
    result['gflops'] = rate_on_every_core()
    if sum(result['threads']) < dp.threads.available_cores():
        # Devices that hold fewer threads than the cores: the product's
        # rate on the first device's own threads too, so that the step
        # can be set against what those threads alone can compute.
        result['gflops_own'] = matmul_rate(repeats=3, ctx=devices[0])
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


# What profile_training compares by default: one thread per
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
    own (one thread); those with the budget share
    one, measured in turn, fewest devices first. The step is the library's
    (:func:`d2lpar.train_batch`'s four phases, on one minibatch in
    memory). It is timed once as is, and once with every phase (forward
    with the loss, backward, allreduce, update) ended by ``npx.waitall()``,
    an explicit synchronisation point. After each such point the devices
    wait while Python queues the next phase (``waiting``), time the
    unsynchronised step can hide; whether the phases' sum comes out above
    the step depends also on the steps' own spread (:doc:`/book/step-profile`
    compares them). MXNet's profiler times
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
        In the order of ``configs``, per label: ``step_ms`` (the median
        of ``step_times``, each plain step's ms), ``queue_ms`` (the
        median ms until Python had queued a plain step's operators; the
        devices compute the rest of the step after it), ``phase_sums``
        (each synchronised step's phases added up, ms), ``profiled_ms``
        (a step's wall-clock ms under the profiler), ``threads``
        (each device's OpenMP threads when it ran), ``phases`` (median
        ms), ``operators`` (ms per step by operator name, summed over
        devices, largest first), ``waiting`` (ms) and ``gflops`` (the
        matrix product's rate on every core, measured in the same process
        right after) and ``limit_ms`` (the step's FLOPs at that rate);
        where the devices held fewer threads than the cores, also
        ``gflops_own`` (the product on the first device's own threads)
        and ``limit_own_ms`` (the FLOPs at that rate).
    """
    # One thread needs a process the budget never touched; the budgeted
    # settings share one (it sets the threads per step), which saves
    # starting Python and MXNet again.
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
            if 'gflops_own' in result:
                result['limit_own_ms'] = (
                    1000 * lenet_flops(batch_size)
                    / (result['gflops_own'] * 1e9)
                )  # fmt: skip
            out[label] = result
    return {label: out[label] for label, _, _ in configs}


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
            f'({p["limit_ms"]:.1f} ms at {p["gflops"]:.0f} GFLOP/s on every '
            f'core, measured in the same process); with a waitall after '
            f'each phase: {phases} (ms)'
        )
        if 'limit_own_ms' in p:  # fewer threads than cores: their limit
            lines.append(
                f'    = {p["step_ms"] / p["limit_own_ms"]:.1f}x the limit on '
                f'its own threads ({p["limit_own_ms"]:.1f} ms at '
                f'{p["gflops_own"]:.0f} GFLOP/s)'
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


def plot_profile(profile, top=5, names=None):
    """Stacked bars: each profiled step's costliest operators.

    Parameters
    ----------
    profile : dict
        From :func:`profile_training`.
    top : int, optional
        Operators shown by name (the largest of the first profile); the
        rest are summed as "other".
    names : list of str, optional
        The operators shown by name instead (MXNet's names, e.g.
        ``'Activation'``), in this order; ``top`` is then not used.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    first = next(iter(profile.values()))['operators']
    names = list(first)[:top] if names is None else list(names)
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
