"""d2lpar.pages.figures: each helper returns a Figure with the promised marks."""

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

import d2lpar as dp
from d2lpar.multiprocess.netem import parse_rate


def test_parallelism_schemes_has_three_panels():
    """Three titled panels, each with drawn boxes."""
    fig = dp.draw_parallelism_schemes()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        'network partitioning',
        'layer-wise partitioning',
        'data parallelism',
    ]
    boxes = [
        sum(isinstance(p, Rectangle) for p in ax.patches) for ax in fig.axes
    ]
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
    """One accuracy line per run, and one line per run of every epoch's
    training seconds (not a mean, which would hide the spread)."""
    runs = [
        dp.TrainResult([0.1, 0.5], [2.0, 2.0], [], 256, 0.2),
        dp.TrainResult([0.1, 0.6], [1.0, 3.0], [], 256, 0.2),
    ]
    fig = dp.plot_accuracy(runs, ['1 device', '2 devices'])
    ax_acc, ax_time = fig.axes
    assert [list(line.get_ydata()) for line in ax_acc.lines] == [
        [0.1, 0.5],
        [0.1, 0.6],
    ]
    assert [list(line.get_ydata()) for line in ax_time.lines] == [
        [2.0, 2.0],
        [1.0, 3.0],
    ]
    assert ax_time.get_ylabel() == 'training seconds'
    plt.close(fig)


def test_plot_accuracy_leaves_room_above_the_longest_epoch():
    """One-epoch runs (the training chapter's): the time panel starts at
    0 and ends above the longest epoch, so no marker sits on the frame."""
    runs = [
        dp.TrainResult([0.5], [0.85], [], 256, 0.2),
        dp.TrainResult([0.5], [0.91], [], 256, 0.2),
    ]
    fig = dp.plot_accuracy(runs, ['MXNet', 'PyTorch'])
    bottom, top = fig.axes[1].get_ylim()
    assert bottom == 0 and top > 0.91 * 1.05, (bottom, top)
    plt.close(fig)


def test_plot_accuracy_ticks_whole_epochs():
    """A short run's epoch axis has ticks only at whole epochs (no 1.25)."""
    runs = [dp.TrainResult([0.1, 0.5, 0.7], [1.0] * 3, [], 256, 0.2)]
    fig = dp.plot_accuracy(runs, ['1 device'])
    fig.canvas.draw()
    ticks = fig.axes[0].get_xticks()
    assert len(ticks) >= 2 and all(t == int(t) for t in ticks), ticks
    plt.close(fig)


def test_plot_traffic_draws_the_counted_bytes():
    """One line per schedule; each point is the busiest device's received
    bytes over N, as costmodel.busiest_bytes states them."""
    from d2lpar.comm.costmodel import busiest_bytes

    ks = (2, 4, 8)
    fig = dp.pages.plot_traffic(4 * 840, ks)
    lines = fig.axes[0].lines
    assert [line.get_label() for line in lines] == list(dp.comm.SCHEDULES)
    for line in lines:
        want = [busiest_bytes(line.get_label(), k, 1.0) for k in ks]
        assert list(line.get_ydata()) == want
    plt.close(fig)


def test_plot_cost_model_draws_the_model():
    """Every curve is costmodel.allreduce_time in milliseconds."""
    fig = dp.pages.plot_cost_model(1e6, 1e9, 1e-5, ks=(2, 3, 4))
    for line in fig.axes[0].lines:
        want = [
            1e3 * dp.comm.allreduce_time(line.get_label(), k, 1e6, 1e9, 1e-5)
            for k in (2, 3, 4)
        ]
        assert list(line.get_ydata()) == want
    plt.close(fig)


def test_every_benchmark_row_and_model_curve_has_its_own_style():
    """LINE_STYLES names every row the benchmark writes and every
    algorithm of the cost model, and no two share a style."""
    from d2lpar.bench.allreduce import BASELINES
    from d2lpar.comm import ALGORITHMS

    names = set(BASELINES) | set(ALGORITHMS) | set(dp.comm.MESSAGE_PATTERNS)
    assert names <= set(dp.pages.LINE_STYLES)
    styles = [tuple(sorted(s.items())) for s in dp.pages.LINE_STYLES.values()]
    assert len(set(styles)) == len(styles)


def test_network_plot_draws_each_setup_and_the_placed_model_once():
    """One measured and one model line per setup; the model with arrays
    as placed only where it differs from the model (2 servers)."""
    rows = []
    for engine, servers, hosts in [
        ('kvstore', 1, 2),
        ('kvstore', 2, 2),
        ('horovod', None, 1),
    ]:
        for rate in ('1gbit', '100mbit'):
            predicted = 0.1 + 1e7 / parse_rate(rate)
            placed = None
            if hosts == 2:
                placed = predicted * (2 if servers == 2 else 1)
            rows.append(
                dict(
                    engine=engine,
                    servers=servers,
                    hosts=hosts,
                    rate=rate,
                    sec_per_step=predicted * 1.1,
                    predicted=predicted,
                    placed=placed,
                )
            )
    fig = dp.pages.plot_network(rows)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert len(labels) == 3 * 2 + 1
    assert [x for x in labels if 'as placed' in x] == [
        '2 hosts, PS 2 servers: model, arrays as placed'
    ]
    assert '1 host, Horovod: measured' in labels
    # Equal models of two setups stay apart: each setup sits beside the
    # rate, so no model line hides another's.
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    xs = [
        tuple(lines[f'{name}: model'].get_xdata())
        for name in (
            '2 hosts, PS 1 server',
            '2 hosts, PS 2 servers',
            '1 host, Horovod',
        )
    ]
    assert len(set(xs)) == 3


def test_network_plot_joins_no_two_rates_with_a_line():
    """Every setup is drawn as markers only: a line between two measured
    rates would stand for values measured at none of the rates between."""
    rows = [
        dict(
            engine='kvstore',
            servers=1,
            hosts=2,
            rate=rate,
            sec_per_step=0.2,
            predicted=0.1 + 1e7 / parse_rate(rate),
            placed=0.5,
        )
        for rate in ('1gbit', '100mbit')
    ]
    fig = dp.pages.plot_network(rows)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3  # measured, model, model as placed
    for line in lines:
        assert len(line.get_xdata()) == 2
        assert line.get_linestyle() == 'None', line.get_label()
        assert line.get_marker() not in (None, '', 'None')
