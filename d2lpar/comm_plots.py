"""Figures for the communication chapter; each returns a Figure."""
import matplotlib.pyplot as plt

from . import schedules
from .costmodel import allreduce_time

LINE_STYLES = {'copy (limit)': 'k--', 'copy+add floor': 'k:',
               'naive': 'o-', 'naive (reused)': 'o:', 'sharded': 's-',
               'ring': '^-', 'kvstore device': 'd--', 'kvstore local': 'v--',
               'cpu': 'x:'}


def draw_ring_trace(k=4):
    """Draw which chunk each device holds after each ring step.

    Taught in the chapter on communication. One panel per step: rows are
    devices, columns chunks, and the number is how many devices'
    contributions that chunk holds (``k`` means fully summed). The
    panels replay :func:`d2lpar.schedules.ring_schedule`, the schedule
    :func:`d2lpar.ring_allreduce` runs.

    Parameters
    ----------
    k : int, optional
        Number of devices.

    Returns
    -------
    matplotlib.figure.Figure
    """
    states = schedules.trace(schedules.ring_schedule(k), k)
    fig, axes = plt.subplots(1, len(states),
                             figsize=(1.55 * len(states), 2.2))
    for t, (ax, state) in enumerate(zip(axes, states)):
        ax.imshow(state, cmap='Blues', vmin=0, vmax=k)
        for d in range(k):
            for c in range(k):
                ax.text(c, d, state[d][c], ha='center', va='center',
                        color='white' if state[d][c] > k / 2 else 'black',
                        fontsize=8)
        phase = ('start' if t == 0 else f'reduce-scatter {t}' if t < k
                 else f'all-gather {t - k + 1}')
        ax.set_title(phase, fontsize=8)
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
        ax.tick_params(labelsize=7)
        ax.set_xlabel('chunk', fontsize=7)
    axes[0].set_ylabel('device', fontsize=7)
    fig.tight_layout()
    return fig


def plot_traffic(nbytes, ks=(2, 4, 8, 16)):
    """Bytes the busiest device sends plus receives, per algorithm.

    Parameters
    ----------
    nbytes : int
        Bytes per device's array.
    ks : sequence of int, optional
        Device counts.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(5, 3))
    makers = {'naive': schedules.naive_schedule,
              'sharded': schedules.sharded_schedule,
              'ring': schedules.ring_schedule}
    for name, make in makers.items():
        busiest = []
        for k in ks:
            sent, received = schedules.traffic(make(k), k, nbytes // 4)
            busiest.append(max(s + r for s, r in zip(sent, received))
                           / nbytes)
        ax.plot(ks, busiest, LINE_STYLES[name], label=name)
    ax.set(xlabel='devices k', ylabel='busiest device moves (x N)',
           xscale='log', xticks=ks, xticklabels=[str(k) for k in ks])
    ax.minorticks_off()
    ax.legend()
    fig.tight_layout()
    return fig


def plot_cost_model(nbytes, bandwidth, latency, ks=range(2, 17)):
    """Predicted allreduce time versus number of devices.

    Parameters
    ----------
    nbytes, bandwidth, latency : float
        See :func:`d2lpar.costmodel.allreduce_time`.
    ks : sequence of int, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(5, 3))
    for name in ('cpu', 'naive', 'sharded', 'ring'):
        times = [1e3 * allreduce_time(name, k, nbytes, bandwidth, latency)
                 for k in ks]
        ax.plot(list(ks), times, LINE_STYLES[name], label=name,
                markersize=4)
    ax.set(xlabel='devices k', ylabel='predicted ms', yscale='log')
    ax.legend()
    fig.tight_layout()
    return fig


def plot_bandwidth(rows):
    """Measured bandwidth per algorithm against the copy limit.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`d2lpar.bench_allreduce.run`.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per device count; the dashed black line is a plain
        copy of the same bytes, the dotted one the copies and additions
        any allreduce needs (the floor).
    """
    ks = sorted({r['devices'] for r in rows})
    fig, axes = plt.subplots(1, len(ks), figsize=(5 * len(ks), 3.3),
                             squeeze=False, sharey=True)
    for ax, k in zip(axes[0], ks):
        names = dict.fromkeys(r['algorithm'] for r in rows)
        for name in names:
            mine = [r for r in rows if r['devices'] == k
                    and r['algorithm'] == name]
            style = LINE_STYLES[name]
            ax.plot([r['bytes'] / 2**20 for r in mine],
                    [r['gb_per_s'] for r in mine], style, label=name,
                    markersize=4)
        ax.set(xscale='log', yscale='log', xlabel='MB per device',
               title=f'{k} devices')
    axes[0][0].set_ylabel('GB/s (array bytes / time)')
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_engines(rows, nbytes):
    """Bar charts of :func:`d2lpar.bench_engines.measure_engine` rows.

    Taught in the chapter on several processes. Left: milliseconds per
    step. Right: bytes sent over loopback per step, in units of the
    gradients' size ``N``, beside the textbook count (parameter server
    with one server: each worker pushes and pulls ``N``, ``2kN`` in all;
    ring all-reduce: ``2(k-1)N``).

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
    model = [2 * r['workers'] if r['engine'] == 'kvstore'
             else 2 * (r['workers'] - 1) for r in rows]
    sent = [(r['bytes_per_step'] or 0) / nbytes for r in rows]
    x = range(len(rows))
    right.bar([i - 0.2 for i in x], sent, 0.4, label='measured')
    right.bar([i + 0.2 for i in x], model, 0.4, label='model', alpha=0.6)
    right.set_xticks(list(x), names)
    right.set_ylabel('bytes per step / N')
    right.legend()
    fig.tight_layout()
    return fig
