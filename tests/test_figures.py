"""d2lpar.figures: each helper returns a Figure with the promised marks."""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

import d2lpar as dp


def test_parallelism_schemes_has_three_panels():
    """Three titled panels, each with drawn boxes."""
    fig = dp.draw_parallelism_schemes()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ['network partitioning', 'layer-wise partitioning',
                      'data parallelism']
    boxes = [sum(isinstance(p, Rectangle) for p in ax.patches)
             for ax in fig.axes]
    assert boxes == [4, 8, 10]  # layers; half-layers; 2 nets + 2 batches
    plt.close(fig)


def test_plot_split_one_box_per_example():
    """10 examples on 3 devices: 10 boxes, labelled 4, 3 and 3."""
    fig = dp.plot_split(10, 3)
    ax = fig.axes[0]
    assert len(ax.patches) == 10
    labels = [t.get_text() for t in ax.texts if t.get_text().startswith('d')]
    assert labels == ['device 0: 4', 'device 1: 3', 'device 2: 3']
    plt.close(fig)


def test_plot_accuracy_draws_each_run():
    """One accuracy line per run and one bar of seconds per run."""
    runs = [dp.TrainResult([0.1, 0.5], [2.0, 2.0], [], 256, 0.2),
            dp.TrainResult([0.1, 0.6], [1.0, 3.0], [], 256, 0.2)]
    fig = dp.plot_accuracy(runs, ['1 device', '2 devices'])
    ax_acc, ax_time = fig.axes
    assert [list(line.get_ydata()) for line in ax_acc.lines] == \
        [[0.1, 0.5], [0.1, 0.6]]
    assert [bar.get_height() for bar in ax_time.patches] == [2.0, 2.0]
    plt.close(fig)


def test_plot_accuracy_ticks_whole_epochs():
    """A short run's epoch axis has ticks only at whole epochs (no 1.25)."""
    runs = [dp.TrainResult([0.1, 0.5, 0.7], [1.0] * 3, [], 256, 0.2)]
    fig = dp.plot_accuracy(runs, ['1 device'])
    fig.canvas.draw()
    ticks = fig.axes[0].get_xticks()
    assert len(ticks) >= 2 and all(t == int(t) for t in ticks), ticks
    plt.close(fig)
