"""Figures for the book. Each helper returns a Figure; the page shows it."""
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from .splitting import shard_sizes

# One colour per device, the same on every page.
DEVICE_COLORS = ('#4C72B0', '#DD8452', '#55A868', '#C44E52')


def _box(ax, x, y, w, h, color, text=''):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, alpha=0.85,
                           edgecolor='black', linewidth=0.8))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha='center', va='center',
                fontsize=8, color='white')


def _arrow(ax, start, end):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle='-|>',
                                 mutation_scale=10, color='0.3'))


def draw_parallelism_schemes():
    """Draw three ways to split training over two devices.

    Taught in the chapter "Splitting the work". Blue is device 0,
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
        _box(axes[0], 0.3, 0.6 + i, 1.4, 0.6, c0 if i < 2 else c1,
             f'layer {i + 1}')
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
    axes[2].annotate('', xy=(1.1, 4.3), xytext=(0.9, 4.3),
                     arrowprops=dict(arrowstyle='<|-|>', color='0.3'))
    axes[2].text(1.0, 4.55, 'sum gradients', ha='center', fontsize=8)
    titles = ('network partitioning', 'layer-wise partitioning',
              'data parallelism')
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, 2)
        ax.set_ylim(-0.4, 4.9)
        ax.axis('off')
    fig.legend(handles=[Rectangle((0, 0), 1, 1, color=c0),
                        Rectangle((0, 0), 1, 1, color=c1)],
               labels=['device 0', 'device 1'], loc='lower center',
               ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_split(n, k):
    """Show which of ``n`` examples each of ``k`` devices receives.

    Taught in the chapter "split_batch": the shards of
    :func:`d2lpar.split_batch`, one colour per device.

    Parameters
    ----------
    n, k : int
        Number of examples and of devices (``n >= k``, ``k <= 4``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(min(10, 0.5 * n + 1), 1.3))
    start = 0
    for device, size in enumerate(shard_sizes(n, k)):
        for i in range(start, start + size):
            _box(ax, i, 0, 0.95, 0.95, DEVICE_COLORS[device], str(i))
        ax.text(start + size / 2, -0.35, f'device {device}: {size}',
                ha='center', va='top', fontsize=9)
        start += size
    ax.set_xlim(-0.2, n + 0.2)
    ax.set_ylim(-0.9, 1.1)
    ax.axis('off')
    return fig


def plot_accuracy(results, labels):
    """Compare runs: test accuracy per epoch and seconds per epoch.

    Taught in the chapter on training with 1 then 2 devices.

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
        ax_acc.plot(epochs, result.test_acc, 'o-', color=color,
                    label=label)
    ax_acc.set(xlabel='epoch', ylabel='test accuracy', ylim=(0, 1))
    ax_acc.legend()
    ax_time.bar(labels, [r.sec_per_epoch for r in results],
                color=DEVICE_COLORS[:len(results)])
    ax_time.set(ylabel='seconds per epoch')
    fig.tight_layout()
    return fig
