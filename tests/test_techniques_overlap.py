"""d2lpar.techniques.overlap: buckets cover every gradient once; overlapping or
not, bucketed or not, the step is train_batch's step."""

import mxnet as mx
import pytest
from conftest import make_batches
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.techniques import overlap

LENET_SIZES = [180, 20, 25000, 50, 102400, 128, 1280, 10]


@pytest.mark.parametrize('bucket_bytes', [None, 1, 4000, 120000, 10**9])
@pytest.mark.parametrize('reverse', [True, False])
def test_buckets_cover_every_parameter_once(bucket_bytes, reverse):
    """Every index appears exactly once, in backward (or forward) order,
    and no bucket of several parameters exceeds bucket_bytes."""
    buckets = overlap.make_buckets(LENET_SIZES, bucket_bytes, reverse)
    flat = [i for b in buckets for i in b]
    want = list(range(len(LENET_SIZES)))
    assert flat == (want[::-1] if reverse else want)
    for b in buckets:
        if len(b) > 1:
            assert sum(4 * LENET_SIZES[i] for i in b) <= bucket_bytes


def test_no_bucket_size_means_one_bucket_per_parameter():
    """bucket_bytes=None gives singletons, the last parameter first."""
    assert overlap.make_buckets([3, 4, 5]) == [[2], [1], [0]]


@pytest.mark.parametrize(
    'options',
    [
        {'overlap': False},
        {'overlap': True},
        {'bucket_bytes': 4 * 30000},
        {'bucket_bytes': 10**9},
        {'reverse': False, 'bucket_bytes': 4 * 30000},
        {'algorithm': dp.ring_allreduce, 'bucket_bytes': 4 * 30000},
    ],
)
def test_step_equals_train_batch(options):
    """Three steps on 3 devices give train_batch's parameters: exactly
    with the naive allreduce (same additions in the same order), up to
    rounding with a ring (rtol 1e-5); the replicas are identical."""
    devices = [mx.cpu(i) for i in range(3)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    ours = [dp.get_params(start, d) for d in devices]
    ref = [dp.get_params(start, d) for d in devices]
    algorithm = options.get('algorithm', dp.allreduce)
    for X, y in make_batches(sizes=(12, 11, 7)):
        overlap.train_batch(X, y, ours, devices, 0.5, **options)
        dp.train_batch(X, y, ref, devices, 0.5, algorithm=algorithm)
    for replica in ours:
        for p, q in zip(replica, ours[0]):
            assert_array_equal(p.asnumpy(), q.asnumpy())
    for p, q in zip(ours[0], ref[0]):
        if algorithm is dp.allreduce:
            assert_array_equal(p.asnumpy(), q.asnumpy())
        else:  # a ring cut into other chunks adds in another order
            assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)


def _scripted_timer(monkeypatch, seconds):
    """Replace the timer time_overlap uses: each call runs the step once
    (it really trains) and returns the next of ``seconds[config]``; the
    configurations timed are recorded in order, each known by the
    allreduce it was given."""
    from d2lpar.bench import timing

    order, left = [], {name: iter(s) for name, s in seconds.items()}
    seen = []  # the allreduces the current timing's step called

    def median_seconds(fn, repeats, warmup):
        seen.clear()
        fn()
        order.append(seen[0])
        return next(left[order[-1]])

    monkeypatch.setattr(timing, 'median_seconds', median_seconds)

    def named(name):
        def allreduce(data):
            seen.append(name)
            dp.allreduce(data)

        return allreduce

    configs = {name: {'algorithm': named(name)} for name in seconds}
    return configs, order


def test_time_overlap_interleaves_configurations_by_round(monkeypatch):
    """Every round times each configuration once, in the order given and
    reversed every other round (a busy moment slows one round of one
    configuration, not the comparison; none is always timed first), each
    with its own options; per_round=True returns each configuration's
    medians in round order."""
    seconds = {'serial': [0.3, 0.1, 0.2], 'overlap': [0.2, 0.4, 0.25]}
    configs, order = _scripted_timer(monkeypatch, seconds)
    times = overlap.time_overlap(
        configs, [mx.cpu(0), mx.cpu(1)], batch_size=8, rounds=3,
        per_round=True,
    )  # fmt: skip
    assert order == ['serial', 'overlap', 'overlap', 'serial',
                     'serial', 'overlap']  # fmt: skip
    assert times == seconds


def test_time_overlap_keeps_each_configurations_fastest_round(monkeypatch):
    """per_round=False keeps the fastest round of each configuration,
    wherever it falls."""
    seconds = {'serial': [0.3, 0.1, 0.2], 'overlap': [0.2, 0.4, 0.25]}
    configs, _ = _scripted_timer(monkeypatch, seconds)
    times = overlap.time_overlap(
        configs, [mx.cpu(0), mx.cpu(1)], batch_size=8, rounds=3
    )
    assert times == {'serial': 0.1, 'overlap': 0.2}


def test_plot_bucket_sweep_draws_each_mode_at_its_sizes():
    """One error-bar line per mode, at the x positions of the bucket
    labels it was measured at, in ms."""
    times = {
        ('overlap', 'per parameter'): [0.1, 0.12],
        ('overlap', '25 MB'): [0.09, 0.1],
        ('serial', 'per parameter'): [0.11, 0.13],
    }
    fig = overlap.plot_bucket_sweep(times)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ['per parameter', '25 MB']
    lines = [c.lines[0] for c in ax.containers]  # the data lines
    assert len(lines) == 2
    assert_allclose(lines[0].get_ydata(), [110, 95])
    assert len(lines[1].get_xdata()) == 1


def test_comm_overlap_counts_only_covered_communication():
    """A copy inside a compute operator counts fully, one half-covered
    counts half, one alone not at all; parallel compute counts once."""
    events = [
        (0, 'Convolution', 0.0, 10.0),
        (1, 'Convolution', 2.0, 8.0),
        (0, 'CopyCPU2CPU', 4.0, 6.0),  # covered: 2 ms
        (1, 'CopyCPU2CPU', 9.0, 11.0),  # half covered: 1 ms
        (0, 'CopyCPU2CPU', 20.0, 23.0),
    ]  # alone: 0 ms
    assert overlap.comm_overlap(events) == (3.0, 7.0)


def test_plot_timeline_has_one_row_per_device():
    """The timeline labels one row per device seen in the events."""
    events = [(0, 'Convolution', 0.0, 1.0), (1, 'CopyCPU2CPU', 0.5, 0.7)]
    fig = overlap.plot_timeline(events)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ['device 0', 'device 1']


@pytest.mark.slow
def test_profile_step_sees_both_devices_and_their_copies():
    """A profiled 2-device step has compute operators on both devices and
    the allreduce's copies, with ends after starts."""
    events = overlap.profile_step({}, num_devices=2, batch_size=16)
    assert {d for d, *_ in events} == {0, 1}
    names = {name for _, name, *_ in events}
    assert 'CopyCPU2CPU' in names and 'Convolution' in names
    assert all(t >= s for *_, s, t in events)


def test_ddp_buckets_close_once_a_bucket_reaches_its_limit():
    """DDP closes a bucket after the gradient that crosses its limit:
    two 0.76 MiB gradients share the 1 MiB first bucket (a rule that
    keeps buckets within their limit would give three buckets)."""
    assert overlap.ddp_buckets([200_000, 200_000, 200_000]) == [[0, 1], [2]]
    # later buckets use the second limit
    assert overlap.ddp_buckets([1, 1, 2, 2, 5], 4, 16, itemsize=4) == [
        [0],
        [1, 2, 3],
        [4],
    ]


def test_resnet50_sizes_count_its_parameters_fc_bias_first():
    sizes = overlap.resnet50_sizes()
    assert sum(sizes) == 25_557_032
    assert sizes[:2] == [1000, 2048 * 1000]


def test_ddp_buckets_match_torch():
    """The same buckets as torch's own assignment (the function DDP
    calls), for ResNet-50 in gradient-ready order and for LeNet."""
    torch = pytest.importorskip('torch')
    dist = pytest.importorskip('torch.distributed')
    if not dist.is_available():
        pytest.skip('torch.distributed is not built in')
    limits = [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * 2**20]
    for sizes in (overlap.resnet50_sizes(), LENET_SIZES[::-1]):
        tensors = [torch.empty(n) for n in sizes]
        want, _ = dist._compute_bucket_assignment_by_size(
            tensors, limits, [False] * len(sizes), list(range(len(sizes)))
        )
        assert overlap.ddp_buckets(sizes, *limits) == [list(b) for b in want]
