"""Training speed against the machine's limit: ``python -m d2lpar bench train``.

Two ways to train LeNet on Fashion-MNIST are timed side by side, each
for 1, 2 and 4 devices, in a fresh process per way and round:

- ``d2l``: the way d2l's chapter trains, written here in this project's
  own code: d2l's DataLoader with its worker processes, d2l's
  copy-to-the-first-device allreduce, a ``npx.waitall()`` after every
  step, and MXNet's defaults (a scratch pool of 4 buffers; threads per
  device as :func:`d2lpar.threads.mxnet_default_threads` says).
- ``d2lpar``: :func:`d2lpar.train`, the library's default path (its
  in-memory data pipeline, scratch pool, thread budget, and a loop that
  never waits for a step before queueing the next).

Beside each row stands the limit (:mod:`d2lpar.bench.limit`): the
step's floating-point operations at the best rate a matrix product
reached while the benchmark ran, an estimate of the fastest a step could
be here, not a bound.

With ``torch=True`` (the command line's default) PyTorch's rows stand
beside them, measured in the same rounds
(:mod:`d2lpar.bench.torch_train`): one process on every core, the
hand-written step on 2 devices, DDP over 2 processes.
:mod:`d2lpar.bench.profile` says where a step's time goes.
"""

import os
import statistics

from .limit import lenet_flops, rate_on_every_core
from .step import in_fresh_process_each, round_order
from .timing import compare_times

PATHS = ('d2l', 'd2lpar')
# d2l.get_dataloader_workers() on Linux: the processes d2l's loader starts.
D2L_LOADER_WORKERS = 4


def _rates(runs):
    """In a fresh process: ``runs`` matrix-product rates on every core, in
    GFLOP/s (:func:`d2lpar.bench.rate_on_every_core`)."""
    return [rate_on_every_core() for _ in range(runs)]


# What _data read, kept for the rest of the process: one round's process
# measures every device count in turn, and each measurement read and
# decoded all 60,000 training images again (about a second of CPU each
# time, outside the timed pass but in every build's time).
_READ = {}


def _data(batch_size, steps, loader_workers):
    """``steps`` minibatches of the real data: an epoch times them all,
    so the seconds divided by ``steps`` are per step (``steps + 1`` here
    made every ms/step 7/6 too high at 6 steps).

    The library's iterator (``loader_workers=0``) is made once per
    process and batch and reused; d2l's loader is made anew each call
    (its worker processes start with it), over arrays read once."""
    from mxnet import gluon

    from ..data import find_fashion_mnist, load_fashion_mnist, read_split

    n = batch_size * steps
    if not loader_workers:
        if (batch_size, n) not in _READ:
            train_iter, _ = load_fashion_mnist(batch_size, num_train=n)
            _READ[batch_size, n] = train_iter
        return _READ[batch_size, n]
    if 'train' not in _READ:
        _READ['train'] = read_split(
            find_fashion_mnist(download=False), 'train'
        )
    X, y = _READ['train']
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
    """d2l's chapter step, written here (its allreduce, its split).

    The forward and backward pass are the library's
    (:func:`d2lpar.training.device_gradients`, which sets no thread
    budget: this path keeps the threads chosen for it). d2l's
    backpropagates each device's per-example losses, which gives the
    gradient of their sum: the same arrays.
    """
    from mxnet import gluon

    # d2l's sgd as written out in the library: the benchmark (which the
    # training chapter runs) must work where d2l is not installed.
    from .. import _d2l as d2l
    from ..training import device_gradients

    X_shards = gluon.utils.split_and_load(X, devices)
    y_shards = gluon.utils.split_and_load(y, devices)
    device_gradients(X_shards, y_shards, device_params)
    for i in range(len(device_params[0])):
        d2l_allreduce([device_params[c][i].grad for c in range(len(devices))])
    for params in device_params:
        d2l.sgd(params, lr, X.shape[0])


def _epoch_seconds(path, num_devices, batch_size, steps, devices=None):
    """Seconds of a second pass over ``steps`` batches on ``path``.

    The first pass warms up (memory, operator set-up, loader start).
    ``devices`` replaces the first ``num_devices`` devices (one device
    measured again on a context not used before, :func:`_round`).
    """
    from mxnet import npx

    from ..devices import devices as make_devices
    from ..model import init_lenet_params
    from ..parameters import get_params
    from ..training import train

    if devices is None:
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

    # MXNet's default (half the processors on x86) for cpu(0), which
    # import d2lpar gave every core.
    thread_budget(devices[:1], per_device=mxnet_default_threads())
    # d2l's loader forks its workers on Linux (a notebook's kernel starts
    # them with the default method). This function runs in a spawned
    # child, which would spawn them, each importing MXNet anew: 25-30 s
    # per call here, outside the timed pass but in every build's time.
    import multiprocessing

    multiprocessing.set_start_method('fork', force=True)
    data = _data(batch_size, steps, D2L_LOADER_WORKERS)
    params = [get_params(init_lenet_params(0, 0.1), d) for d in devices]
    for _ in range(2):  # the first pass warms up
        start = perf_counter()
        for X, y in data:
            d2l_train_batch(X, y, params, devices, 0.2)
            npx.waitall()  # as d2l's train loop does after every step
        seconds = perf_counter() - start
    return seconds


def _after_device(counts):
    """The device on which one device trains again after ``counts``.

    On GPUs, the first GPU again: a GPU keeps no thread setting from the
    devices it trained beside. On CPU contexts, one that none of
    ``counts`` used (``cpu(max(counts))``), given every core before
    anything runs on it (:func:`d2lpar.threads.claim_every_core`): the
    first device keeps the share of the cores it had beside the others
    (:func:`round_order`), so it cannot be measured again alone.
    """
    import mxnet as mx

    from ..devices import devices as make_devices
    from ..threads import claim_every_core

    first = make_devices(1)[0]
    if first.device_type != 'cpu':
        return first
    ctx = mx.cpu(max(counts))
    claim_every_core(ctx)
    return ctx


def _round(path, counts, batch_size, steps, after=False):
    """In a fresh process: one round of ``path`` on each device count in
    ``counts`` (seconds of each timed pass), then one run of the matrix
    product's rate on every core (GFLOP/s), a sample of the machine's
    speed at that moment for the limit.

    With ``after``, one device trains once more after all of ``counts``
    (on :func:`_after_device`, chosen before anything runs), so that the
    benchmark measures what its fixed order (one device always first)
    does: returns ``(seconds, rate, (seconds after, that device as
    text))``, else ``(seconds, rate, None)``.
    """
    again = _after_device(counts) if after else None
    seconds = [_epoch_seconds(path, k, batch_size, steps) for k in counts]
    later = None
    if after:
        later = (
            _epoch_seconds(path, 1, batch_size, steps, devices=[again]),
            str(again),
        )
    return seconds, rate_on_every_core(), later


def compare_training(
    device_counts=(1, 2, 4),
    paths=PATHS,
    batch_size=256,
    steps=20,
    rounds=3,
    timeout=600,
    progress=None,
    limit_runs=3,
    torch=False,
    after=False,
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
        rounds is reported, and every round is kept.
    timeout : float, optional
        Seconds allowed for each child process (one per path and round,
        measuring every device count in turn).
    progress : callable, optional
        Called with a line of text after each measurement.
    limit_runs : int, optional
        Runs of the matrix product's rate in a fresh process of their
        own before the rounds; every round's process adds one more run
        after its steps. The best of all of them is the limit's rate.
    torch : bool, optional
        Also time PyTorch's rows (:data:`d2lpar.bench.torch_train.ROWS`,
        those whose device count is in ``device_counts``) in every
        round, each in fresh processes, in the same alternating order;
        skipped with a printed reason where PyTorch is not installed.
    after : bool, optional
        In every round, after all device counts, train ``d2lpar`` on one
        device once more: on GPUs the first GPU again; on CPU contexts one
        that no count used (``cpu(max(device_counts))``), given every core
        before anything runs on it. One device is always measured first
        (``d2lpar.bench.step.round_order``: ``cpu(0)`` keeps the share
        of the cores it had beside the others), and this measures one
        device placed last; on CPU contexts it also runs on another
        context than the first, so the two differ in both.

    Returns
    -------
    dict
        ``rows``: per (path, devices) the median ms per step, every
        round's value (``rounds``), the limit in ms and ``ratio``, the
        median ms per step over that limit; ``flops_per_step``,
        ``gflops`` (the best rate), ``gflops_runs`` (every run of it, in
        the order measured), ``cores``, ``batch_size``, ``steps``; with
        ``torch``: PyTorch's rows too, ``torch_threads`` (per (path,
        devices): PyTorch's threads per process), ``torch_skipped`` (why
        they are missing, or None) and ``ratios``
        (:func:`d2lpar.bench.torch_train.ratios`); with ``after``:
        ``after``, a row like ``rows``' (``path`` ``'d2lpar'``,
        ``devices`` 1, ``rounds``, ``ms_per_step``) of the one device
        measured last in each round, and ``device``, the one it ran on
        (``'cpu(4)'``, ``'gpu(0)'``).
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
    # The limit is the best rate seen, from a process of its own that has
    # run nothing else and from every round's process after its steps:
    # this machine is shared and its speed drifts (one process's rate
    # swung between 104 and 200 GFLOP/s here), and a limit taken at a
    # slow moment would make a step look closer to it than it is.
    (rates,) = in_fresh_process_each({}, _rates, [(limit_runs,)], timeout)
    rates = list(rates)
    times = {(p, k): [] for p in paths for k in device_counts}
    later = []  # with after: d2lpar's one device, last in each round
    later_device = None  # ... and the device it ran on ('cpu(4)', 'gpu(0)')
    defaults = {'d2l': {'MXNET_CPU_TEMP_COPY': '4'}, 'd2lpar': {}}
    torch_rows, skipped, threads = [], None, {}
    if torch:
        from . import torch_train

        skipped = torch_train.torch_missing()
        if skipped and progress:
            progress(skipped)
        if not skipped:
            torch_rows = [
                row for row in torch_train.ROWS if row[1] in device_counts
            ]
            times.update({row: [] for row in torch_rows})
    for r in range(rounds):
        counts = round_order(device_counts, r)
        # The paths alternate too: neither always meets the machine first.
        # PyTorch's rows come after MXNet's on even rounds, before them
        # on odd ones.
        order = [*paths, *torch_rows][:: -1 if r % 2 else 1]
        for path in order:
            if isinstance(path, tuple):  # a PyTorch row
                got = torch_train.measure(*path, batch_size, steps, timeout)
                if got['mxnet']:
                    raise RuntimeError(
                        f'{path}: a PyTorch process imported MXNet, which '
                        f'sets its threads to 1; it must not'
                    )
                threads[path] = got['threads']
                times[path].append(1000 * got['seconds'] / steps)
                if progress:
                    progress(
                        f'round {r + 1}/{rounds}: {path[0]} on {path[1]} '
                        f'device{"s" if path[1] > 1 else ""} '
                        f'({got["processes"]} process'
                        f'{"es" if got["processes"] > 1 else ""}, '
                        f'{got["threads"]} thread'
                        f'{"s" if got["threads"] > 1 else ""} each): '
                        f'{times[path][-1]:.1f} ms/step'
                    )
                continue
            # One process per path and round, not per setting: the path's
            # start-up settings (the scratch pool) are the same for all
            # device counts, and the thread budget is set per call.
            again = after and path == 'd2lpar'
            ((seconds, rate, last),) = in_fresh_process_each(
                defaults[path],
                _round,
                [(path, counts, batch_size, steps, again)],
                timeout,
            )
            rates.append(rate)
            for k, sec in zip(counts, seconds):
                times[path, k].append(1000 * sec / steps)
                if progress:
                    progress(
                        f'round {r + 1}/{rounds}: {path} on {k} '
                        f'device{"s" if k > 1 else ""}: '
                        f'{times[path, k][-1]:.1f} ms/step'
                    )
            if again:
                later.append(1000 * last[0] / steps)
                later_device = last[1]
                if progress:
                    progress(
                        f'round {r + 1}/{rounds}: {path} on 1 device again, '
                        f'after the others: {later[-1]:.1f} ms/step'
                    )
    gflops = max(rates)
    limit_ms = 1000 * flops / (gflops * 1e9)
    if progress:
        progress(f'limit: {gflops:.0f} GFLOP/s = {limit_ms:.1f} ms per step')
    rows = []
    for (path, k), values in times.items():
        ms = statistics.median(values)
        rows.append(
            dict(path=path, devices=k, ms_per_step=ms, rounds=values,
                 limit_ms=limit_ms, ratio=ms / limit_ms)
        )  # fmt: skip
    extra = {}
    if later:
        ms = statistics.median(later)
        extra['after'] = dict(path='d2lpar', devices=1, rounds=later,
                              ms_per_step=ms, limit_ms=limit_ms,
                              ratio=ms / limit_ms,
                              device=later_device)  # fmt: skip
    if torch:
        extra.update(
            torch_skipped=skipped,
            torch_threads={f'{p} {k}': n for (p, k), n in threads.items()},
            ratios=torch_train.ratios(rows),
        )
    return dict(
        **extra,
        rows=rows,
        flops_per_step=flops,
        gflops=gflops,
        gflops_runs=rates,
        cores=cores,
        batch_size=batch_size,
        steps=steps,
    )


def compare_rounds(result, a, b):
    """A verdict on two settings of :func:`compare_training` that every
    round supports.

    Parameters
    ----------
    result : dict
        From :func:`compare_training`.
    a : (str, int)
        ``(path, devices)`` of the setting judged, e.g. ``('d2l', 2)``:
        the key of one row of ``result['rows']``.
    b : (str, int)
        ``(path, devices)`` of the row ``a`` is compared with, e.g.
        ``('d2l', 1)``.

    Returns
    -------
    str
        ``'slower than'`` or ``'faster than'`` when every round of ``a``
        is slower (faster) than every round of ``b``, else ``'not clearly
        different from'`` (the single rounds overlap):
        :func:`d2lpar.bench.compare_times` on the two rows' rounds.

    Raises
    ------
    KeyError
        If ``a`` or ``b`` is not the ``(path, devices)`` of a row.
    """
    rounds = {(r['path'], r['devices']): r['rounds'] for r in result['rows']}
    return compare_times(rounds[a], rounds[b])


def _range(result):
    """'3 runs: 110-149' for the rates behind the limit."""
    rates = result.get('gflops_runs') or [result['gflops']]
    return f'{len(rates)} runs: {min(rates):.0f}-{max(rates):.0f}'


def format_training(result):
    """The table of :func:`compare_training`, with speed-ups."""
    rows = result['rows']
    base = {(r['path'], r['devices']): r['ms_per_step'] for r in rows}
    lines = [
        f'limit: {result["flops_per_step"] / 1e9:.2f} GFLOP per step of '
        f'{result["batch_size"]} examples at {result["gflops"]:.0f} '
        f'GFLOP/s (the faster matrix product on {result["cores"]} cores, '
        f'best of {_range(result)}) = {rows[0]["limit_ms"]:.1f} ms',
        f'{"path":>9} {"devices":>8} {"ms/step":>9} {"x limit":>8} '
        f'{"vs d2l":>7}  each round (ms/step)',
    ]
    for r in rows:
        d2l = base.get(('d2l', r['devices']), float('nan'))
        each = ' '.join(f'{ms:.1f}' for ms in r['rounds'])
        lines.append(
            f'{r["path"]:>9} {r["devices"]:>8} {r["ms_per_step"]:>9.1f} '
            f'{r["ratio"]:>7.2f}x {d2l / r["ms_per_step"]:>6.2f}x  {each}'
        )
    if result.get('after'):
        a = result['after']
        each = ' '.join(f'{ms:.1f}' for ms in a['rounds'])
        lines.append(
            f'{a["path"]:>9} {"1 again":>8} {a["ms_per_step"]:>9.1f} '
            f'{a["ratio"]:>7.2f}x {"":>7}  {each}'
        )
        lines.append(
            '1 again: one device once more after the other counts, in the '
            'same process, on a device that had not trained there'
            + (f' ({a["device"]})' if a.get('device') else '')
        )
    lines.append(
        "x limit: ms/step over the limit above; vs d2l: d2l's ms/step "
        "over this row's; a verdict of faster or slower needs every round "
        'of one setting below every round of the other'
    )
    if 'torch_skipped' in result:
        lines += _torch_lines(result)
    return '\n'.join(lines)


def _torch_lines(result):
    """What each row's ms/step holds, PyTorch's threads, the ratios."""
    from .torch_train import HOLDS, format_ratios

    if result['torch_skipped']:
        return [result['torch_skipped']]
    lines = ['each ms/step is the step plus:']
    for path in dict.fromkeys(r['path'] for r in result['rows']):
        lines.append(f'  {path}: {HOLDS[path]}')
    threads = ', '.join(
        f'{name}: {n}' for name, n in result['torch_threads'].items()
    )
    lines.append(f'PyTorch threads per process (set explicitly): {threads}')
    found = result['ratios']
    if found:
        lines.append(
            'ratios of ms/step, each round measured side by side (a target '
            'is met at or under it):'
        )
        lines += ['  ' + line for line in format_ratios(found)]
    return lines


def save_json(result, path):
    """Write ``result`` as JSON to ``path`` (folders made); return path."""
    import json

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(result, f, indent=1)
    return path


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
