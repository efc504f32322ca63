"""Figures for the book. Each helper returns a Figure; the page shows it."""

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import MaxNLocator

from ..comm import schedules
from ..comm.costmodel import allreduce_time, engine_bytes
from ..splitting import shard_ranges

# One colour per device, the same on every page.
DEVICE_COLORS = ('#4C72B0', '#DD8452', '#55A868', '#C44E52')
# plot_network draws the model with arrays as placed only where it is
# more than this (relative) away from the model.
PLACED_APART = 0.05


def _box(ax, x, y, w, h, color, text=''):
    ax.add_patch(
        Rectangle(
            (x, y),
            w,
            h,
            facecolor=color,
            alpha=0.85,
            edgecolor='black',
            linewidth=0.8,
        )
    )
    if text:
        ax.text(
            x + w / 2,
            y + h / 2,
            text,
            ha='center',
            va='center',
            fontsize=8,
            color='white',
        )


def _arrow(ax, start, end):
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle='-|>', mutation_scale=10, color='0.3'
        )
    )


def draw_parallelism_schemes():
    """Draw three ways to split training over two devices.

    Taught in :doc:`/book/splitting-the-work`. Blue is device 0,
    orange device 1. Left: network partitioning (each device holds
    whole layers). Middle: layer-wise partitioning (each layer's units
    are split). Right: data parallelism (each device holds the whole
    network and half of the minibatch).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    c0, c1 = DEVICE_COLORS[:2]
    layers = range(4)
    for i in layers:  # network partitioning: layers 0-1 | layers 2-3
        _box(
            axes[0],
            0.3,
            0.6 + i,
            1.4,
            0.6,
            c0 if i < 2 else c1,
            f'layer {i + 1}',
        )
    _arrow(axes[0], (1.0, 2.2), (1.0, 2.6))
    for i in layers:  # layer-wise: every layer split in two halves
        _box(axes[1], 0.3, 0.6 + i, 0.7, 0.6, c0, f'{i + 1}a')
        _box(axes[1], 1.0, 0.6 + i, 0.7, 0.6, c1, f'{i + 1}b')
    for i in layers[:-1]:
        _arrow(axes[1], (0.65, 1.2 + i), (1.35, 1.6 + i))
        _arrow(axes[1], (1.35, 1.2 + i), (0.65, 1.6 + i))
    for x, c, d in ((0.1, c0, 0), (1.1, c1, 1)):  # data parallelism
        for i in layers:
            _box(axes[2], x, 0.6 + i, 0.8, 0.6, c, f'layer {i + 1}')
        _box(axes[2], x, -0.2, 0.8, 0.5, '0.5', f'batch half {d}')
    axes[2].annotate(
        '',
        xy=(1.1, 4.3),
        xytext=(0.9, 4.3),
        arrowprops=dict(arrowstyle='<|-|>', color='0.3'),
    )
    axes[2].text(1.0, 4.55, 'sum gradients', ha='center', fontsize=8)
    titles = (
        'network partitioning',
        'layer-wise partitioning',
        'data parallelism',
    )
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, 2)
        ax.set_ylim(-0.4, 4.9)
        ax.axis('off')
    fig.legend(
        handles=[
            Rectangle((0, 0), 1, 1, color=c0),
            Rectangle((0, 0), 1, 1, color=c1),
        ],
        labels=['device 0', 'device 1'],
        loc='lower center',
        ncol=2,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_split(n, k):
    """Show which of ``n`` examples each of ``k`` devices receives.

    Taught in :doc:`/book/split-batch`: the shards of
    :func:`d2lpar.split_batch`, one colour per device.

    Parameters
    ----------
    n : int
        Number of examples (at least ``k``).
    k : int
        Number of devices (at most 4).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(min(10, 0.5 * n + 1), 1.3))
    for device, (start, stop) in enumerate(shard_ranges(n, k)):
        size = stop - start
        for i in range(start, stop):
            _box(ax, i, 0, 0.95, 0.95, DEVICE_COLORS[device], str(i))
        ax.text(
            start + size / 2,
            -0.35,
            f'device {device}: {size}',
            ha='center',
            va='top',
            fontsize=9,
        )
    ax.set_xlim(-0.2, n + 0.2)
    ax.set_ylim(-0.9, 1.1)
    ax.axis('off')
    return fig


def plot_accuracy(results, labels):
    """Compare runs: test accuracy and training seconds, epoch by epoch.

    Taught in :doc:`/book/training`.

    Parameters
    ----------
    results : list of d2lpar.TrainResult
        The runs to compare.
    labels : list of str
        A legend entry per run.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, (ax_acc, ax_time) = plt.subplots(1, 2, figsize=(9, 3.2))
    for result, label, color in zip(results, labels, DEVICE_COLORS):
        epochs = range(1, len(result.test_acc) + 1)
        ax_acc.plot(epochs, result.test_acc, 'o-', color=color, label=label)
    ax_acc.set(xlabel='epoch', ylabel='test accuracy', ylim=(0, 1))
    ax_acc.xaxis.set_major_locator(MaxNLocator(integer=True))  # no 1.25
    ax_acc.legend()
    # Every epoch's time, not a mean: the spread shows whether two runs'
    # epochs overlap. Training only; the test after each epoch is not
    # timed (TrainResult.epoch_seconds).
    for result, label, color in zip(results, labels, DEVICE_COLORS):
        epochs = range(1, len(result.epoch_seconds) + 1)
        ax_time.plot(epochs, result.epoch_seconds, 'o-', color=color,
                     label=label)  # fmt: skip
    # Room above the longest epoch, so that no marker sits on the frame.
    longest = max(max(r.epoch_seconds) for r in results)
    ax_time.set(xlabel='epoch', ylabel='training seconds',
                ylim=(0, 1.1 * longest))  # fmt: skip
    ax_time.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


# One style per benchmark row and model curve, the same on every page.
# Colours tell the families apart (baselines black, the chapter's naive
# allreduce blue, spreading algorithms green, MXNet's kvstore red) and
# markers the members, so lines that overlap stay readable.
LINE_STYLES = {
    'copy': {'color': 'black', 'linestyle': '--'},
    'copy+add': {'color': 'black', 'linestyle': ':'},
    'naive': {'color': '#4C72B0', 'marker': 'o'},
    'naive (reused)': {
        'color': '#4C72B0',
        'marker': 'o',
        'linestyle': ':',
        'markerfacecolor': 'white',
    },
    'sharded': {'color': '#55A868', 'marker': 's', 'linestyle': '--'},
    'ring': {'color': '#55A868', 'marker': '^'},
    'doubling': {'color': '#8172B2', 'marker': 'D'},
    'kvstore device': {'color': '#C44E52', 'marker': 'd', 'linestyle': '--'},
    'kvstore local': {'color': '#C44E52', 'marker': 'v', 'linestyle': ':'},
    'cpu': {'color': '#DD8452', 'marker': 'x', 'linestyle': ':'},
}


def draw_ring_trace(k=4):
    """Draw which chunk each device holds after each ring step.

    Taught in :doc:`/book/allreduce-algorithms`. One panel per step:
    rows are devices, columns chunks, and the number is how many
    devices' contributions that chunk holds (``k`` means fully summed).
    The panels replay :func:`d2lpar.comm.ring_schedule`, the
    schedule :func:`d2lpar.ring_allreduce` runs.

    Parameters
    ----------
    k : int, optional
        Number of devices.

    Returns
    -------
    matplotlib.figure.Figure
    """
    states = schedules.trace(schedules.ring_schedule(k), k)
    fig, axes = plt.subplots(1, len(states), figsize=(1.55 * len(states), 2.2))
    for t, (ax, state) in enumerate(zip(axes, states)):
        ax.imshow(state, cmap='Blues', vmin=0, vmax=k)
        for d in range(k):
            for c in range(k):
                ax.text(
                    c,
                    d,
                    state[d][c],
                    ha='center',
                    va='center',
                    color='white' if state[d][c] > k / 2 else 'black',
                    fontsize=8,
                )
        phase = (
            'start'
            if t == 0
            else f'reduce-scatter {t}'
            if t < k
            else f'all-gather {t - k + 1}'
        )
        ax.set_title(phase, fontsize=8)
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
        ax.tick_params(labelsize=7)
        ax.set_xlabel('chunk', fontsize=7)
    axes[0].set_ylabel('device', fontsize=7)
    fig.tight_layout()
    return fig


def plot_traffic(nbytes, ks=(2, 4, 8, 16)):
    """Bytes the busiest device receives, per algorithm, against k.

    Taught in :doc:`/book/allreduce-algorithms`. Counted by
    :func:`d2lpar.comm.traffic` from the schedules of
    :data:`d2lpar.comm.SCHEDULES`; in every one of them the busiest
    device sends as many bytes as it receives, so one direction is
    drawn.

    Parameters
    ----------
    nbytes : int
        Bytes per device's array (N).
    ks : sequence of int, optional
        Device counts.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(5, 3))
    for name, make in schedules.SCHEDULES.items():
        busiest = [
            max(schedules.traffic(make(k), k, nbytes // 4)[1]) / nbytes
            for k in ks
        ]
        ax.plot(ks, busiest, label=name, **LINE_STYLES[name])
    ax.set(
        xlabel='devices k',
        ylabel='busiest device receives (x N)',
        xscale='log',
        xticks=ks,
        xticklabels=[str(k) for k in ks],
    )
    ax.minorticks_off()
    ax.legend()
    fig.tight_layout()
    return fig


def plot_cost_model(
    nbytes,
    bandwidth,
    latency,
    ks=range(2, 17),
    algorithms=('cpu', 'naive', 'ring', 'doubling'),
):
    """Predicted allreduce time versus number of devices.

    Taught in :doc:`/book/cost-model`. The y-axis is linear, so a
    time that grows in proportion to ``k`` is a straight line. The
    sharded algorithm is left out by default: the model gives it the ring's time exactly,
    and its line would hide the ring's.

    Parameters
    ----------
    nbytes, bandwidth, latency : float
        See :func:`d2lpar.comm.allreduce_time`.
    ks : sequence of int, optional
    algorithms : sequence of str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(5, 3))
    for name in algorithms:
        times = [
            1e3 * allreduce_time(name, k, nbytes, bandwidth, latency)
            for k in ks
        ]
        ax.plot(list(ks), times, label=name, markersize=4, **LINE_STYLES[name])
    ax.set(
        xlabel='devices k',
        ylabel='predicted ms',
        ylim=(0, None),
        title=f'{nbytes / 1e6:.3g} MB per device, '
        f'{bandwidth / 1e9:.3g} GB/s, {1e6 * latency:.3g} us per message',
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_bandwidth(rows):
    """Measured bandwidth per algorithm beside the copy and copy+add.

    Taught in :doc:`/book/measuring`.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`d2lpar.bench.measure_allreduce`.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per device count, each with its own legend; the dashed
        black line is a plain copy of the same bytes, the dotted one the
        copies and additions an allreduce needs (the copy+add reference).
        Sizes in MB of 10**6 bytes.
    """
    ks = sorted({r['devices'] for r in rows})
    names = list(dict.fromkeys(r['algorithm'] for r in rows))
    fig, axes = plt.subplots(
        1, len(ks), figsize=(5.5 * len(ks), 4), squeeze=False, sharey=True
    )
    for ax, k in zip(axes[0], ks):
        for name in names:
            mine = [
                r for r in rows if r['devices'] == k and r['algorithm'] == name
            ]
            ax.plot(
                [r['bytes'] / 1e6 for r in mine],
                [r['gb_per_s'] for r in mine],
                label=name,
                markersize=5,
                alpha=0.85,
                **LINE_STYLES[name],
            )
        ax.set(
            xscale='log',
            yscale='log',
            xlabel='MB per device (10^6 bytes)',
            title=f'{k} devices',
        )
        ax.grid(True, which='major', alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc='lower right')
    axes[0][0].set_ylabel('GB/s (array bytes / time)')
    fig.tight_layout()
    return fig


def plot_engines(rows, nbytes):
    """Bar charts of :func:`d2lpar.bench.measure_engine` rows.

    Taught in :doc:`/book/horovod`. Left: milliseconds per
    step. Right: bytes sent over loopback per step, in units of the
    gradients' size ``N``, beside the textbook count (parameter server
    with one server: each worker pushes and pulls ``N``, ``2kN`` in all;
    ring all-reduce: ``2(k-1)N``; :func:`d2lpar.comm.engine_bytes`).

    Parameters
    ----------
    rows : list of dict
    nbytes : int
        ``N``, the gradients' bytes.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(7, 2.8))
    names = [r['engine'] for r in rows]
    left.bar(names, [1e3 * r['sec_per_step'] for r in rows])
    left.set_ylabel('ms per step')
    model = [engine_bytes(r['engine'], r['workers'], 1)[0] for r in rows]
    sent = [(r['bytes_per_step'] or 0) / nbytes for r in rows]
    x = range(len(rows))
    right.bar([i - 0.2 for i in x], sent, 0.4, label='measured')
    right.bar([i + 0.2 for i in x], model, 0.4, label='model', alpha=0.6)
    right.set_xticks(list(x), names)
    right.set_ylabel('bytes per step / N')
    right.legend()
    fig.tight_layout()
    return fig


def plot_network(rows):
    """Measured step time against the cost model over emulated rates.

    Taught in :doc:`/book/several-hosts`. One color per setup (hosts,
    engine, servers): dots are measured, crosses the model's prediction
    (compute alone plus the model's transfers), pluses the model with the
    bytes each parameter server really holds, from the rows of
    :func:`d2lpar.bench.measure_network`. Markers only: a line between
    two rates would suggest values between them that nobody measured,
    and on a log rate axis the model (compute plus bytes over the rate)
    is a curve, not a straight line. Each setup's points sit a little to
    the side of the rate, so that two setups with the same value both
    stay visible.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..bench.network import setup_name
    from ..multiprocess.netem import parse_rate

    fig, ax = plt.subplots(figsize=(8, 3.4))
    names = list(dict.fromkeys(setup_name(r) for r in rows))
    for i, label in enumerate(names):
        mine = sorted(
            (r for r in rows if setup_name(r) == label),
            key=lambda r: parse_rate(r['rate']),
        )
        shift = 1.04 ** (i - (len(names) - 1) / 2)  # beside the rate
        x = [parse_rate(r['rate']) / 1e6 * shift for r in mine]
        # past the device colors, matplotlib's own cycle: no repeats
        color = DEVICE_COLORS[i] if i < len(DEVICE_COLORS) else f'C{i}'
        ax.plot(
            x,
            [1e3 * r['sec_per_step'] for r in mine],
            'o',
            color=color,
            label=f'{label}: measured',
        )
        ax.plot(
            x,
            [1e3 * r['predicted'] for r in mine],
            'x',
            color=color,
            label=f'{label}: model',
        )
        placed = [r.get('placed') for r in mine]
        if None not in placed and any(  # drawn where it tells more
            abs(p / r['predicted'] - 1) > PLACED_APART
            for p, r in zip(placed, mine)
        ):
            ax.plot(
                x,
                [1e3 * p for p in placed],
                '+',
                markersize=12,  # visible around a measured dot
                color=color,
                label=f'{label}: model, arrays as placed',
            )
    ax.set_xscale('log')
    ax.set_xlabel('link rate (Mbit/s)')
    ax.set_ylabel('ms per step')
    ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.02, 1))
    fig.tight_layout()
    return fig
