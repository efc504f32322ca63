"""d2lpar.bench.allreduce: rows are complete and consistent."""

import csv
import json

import pytest

from d2lpar.bench import allreduce as ab
from d2lpar.pages import figures


@pytest.fixture(scope='module')
def rows():
    return ab.measure_allreduce((2,), (4096, 65536), repeats=2, progress=None)


def test_every_algorithm_and_both_baselines_measured(rows):
    """One row per (k, size, algorithm), both baselines included, with
    bandwidth = bytes / seconds and the ratio to the copy's time."""
    names = list(ab.BASELINES) + list(ab.ALGORITHMS)
    assert [(r['bytes'], r['algorithm']) for r in rows] == [
        (b, n) for b in (4096, 65536) for n in names
    ]
    for r in rows:
        assert len(r['runs']) == 2
        assert r['seconds'] == pytest.approx(sum(r['runs']) / 2)
        assert r['gb_per_s'] == pytest.approx(r['bytes'] / r['seconds'] / 1e9)
        copy = next(
            x
            for x in rows
            if x['bytes'] == r['bytes'] and x['algorithm'] == 'copy'
        )
        assert r['vs_copy'] == pytest.approx(copy['seconds'] / r['seconds'])


def test_save_json_and_csv(rows, tmp_path):
    """Rows round-trip through JSON and CSV for the chapter to plot."""
    ab.save_allreduce_rows(rows, str(tmp_path / 'r.json'))
    assert json.load(open(tmp_path / 'r.json')) == rows
    ab.save_allreduce_rows(rows, str(tmp_path / 'r.csv'))
    back = list(csv.DictReader(open(tmp_path / 'r.csv')))
    assert [r['algorithm'] for r in back] == [r['algorithm'] for r in rows]


def test_plot_bandwidth_one_line_per_algorithm_and_a_legend_per_panel():
    """Every panel of the bandwidth figure has both baselines and every
    algorithm, each in its own style, and a legend naming them all."""
    rows = [
        dict(devices=k, bytes=b, algorithm=name, gb_per_s=1.0)
        for k in (2, 4)
        for b in (4096, 65536)
        for name in list(ab.BASELINES) + list(ab.ALGORITHMS)
    ]
    fig = figures.plot_bandwidth(rows)
    names = list(ab.BASELINES) + list(ab.ALGORITHMS)
    for ax in fig.axes:
        assert [line.get_label() for line in ax.lines] == names
        assert [t.get_text() for t in ax.get_legend().get_texts()] == names
        styles = {
            (line.get_color(), line.get_linestyle(), line.get_marker())
            for line in ax.lines
        }
        assert len(styles) == len(names)


def test_rounds_interleave_every_row(monkeypatch):
    """After the warm-up, each round runs every row once, in turn, the
    order reversed every other round: no row always goes first."""
    calls = []
    monkeypatch.setattr(
        ab,
        'median_seconds',
        lambda fn, repeats, warmup: calls.append(fn) or 1.0,
    )
    fns = {'a': lambda: None, 'b': lambda: None, 'c': lambda: None}
    runs = ab.interleaved_runs(fns, rounds=3, warmup=0)
    a, b, c = fns['a'], fns['b'], fns['c']
    assert calls == [a, b, c, c, b, a, a, b, c]
    assert runs == {name: [1.0] * 3 for name in fns}


def _measured(k, nbytes, runs):
    return [
        dict(
            devices=k,
            bytes=nbytes,
            algorithm=name,
            runs=times,
            seconds=sorted(times)[len(times) // 2],
        )
        for name, times in runs.items()
    ]


def test_size_label_writes_kb_below_one_mb():
    """Every benchmarked size reads in one unit form: kB below 10**6
    bytes, MB from there, as the pages' prose writes them."""
    labels = [ab.size_label(s) for s in ab.ALLREDUCE_SIZES]
    assert labels == ['4 kB', '64 kB', '1 MB', '16 MB', '64 MB']
    assert ab.size_label(999_999) == '999.999 kB'
    assert ab.size_label(2_500_000) == '2.5 MB'


def test_noise_is_the_gap_between_sharded_and_ring():
    """On two devices sharded and ring do the same transfers: the noise
    floor is the relative gap of their medians, whichever is slower."""
    rows = _measured(2, 8, {'sharded': [1.2, 1.2, 1.2], 'ring': [1, 1, 1]})
    assert ab.allreduce_noise(rows, 8) == pytest.approx(0.2)
    rows = _measured(2, 8, {'sharded': [1, 1, 1], 'ring': [1.5, 1.5, 1.5]})
    assert ab.allreduce_noise(rows, 8) == pytest.approx(0.5)


def test_verdict_needs_every_run_and_more_than_the_noise():
    """A difference is stated only if every run of one side beats every
    run of the other and the medians differ by more than the noise."""
    rows = _measured(
        2,
        8,
        {
            'a': [1.0, 1.1, 1.2],
            'b': [1.5, 1.6, 1.7],  # every run slower, medians 1.1 vs 1.6
            'c': [1.0, 2.0, 1.3],  # overlaps a
        },
    )
    assert ab.allreduce_verdict(rows, 2, 8, 'a', 'b', 0.1) == 'faster than'
    assert ab.allreduce_verdict(rows, 2, 8, 'b', 'a', 0.1) == 'slower than'
    assert ab.allreduce_verdict(rows, 2, 8, 'a', 'b', 0.5) == (
        'not clearly different from'
    )
    assert ab.allreduce_verdict(rows, 2, 8, 'a', 'c', 0.0) == (
        'not clearly different from'
    )
    assert ab.judge([1.0, 1.1], [1.5, 1.6]) == 'faster than'
    assert ab.judge([1.0, 1.1], [1.5, 1.6], 0.5) == (
        'not clearly different from'
    )


def test_floor_does_the_work_of_an_allreduce(monkeypatch):
    """Each of k devices receives 2(k-1) chunks of 1/k of the array and
    adds k-1 of them: the least an allreduce of copies and adds needs."""
    import collections

    import mxnet as mx
    from mxnet import np

    received, added = collections.Counter(), collections.Counter()
    copyto, iadd = np.ndarray.copyto, np.ndarray.__iadd__

    def counted_copyto(src, dst):
        received[dst.ctx, src.size] += 1
        return copyto(src, dst)

    def counted_iadd(acc, other):
        added[acc.ctx, other.size] += 1
        return iadd(acc, other)

    monkeypatch.setattr(np.ndarray, 'copyto', counted_copyto)
    monkeypatch.setattr(np.ndarray, '__iadd__', counted_iadd)
    monkeypatch.setattr(
        ab, 'median_seconds', lambda fn, repeats, warmup: fn() or 1.0
    )
    devices = [mx.cpu(i) for i in range(3)]
    assert ab.time_floor(devices, 4 * 3 * 5) == 1.0
    assert received == {(d, 5): 4 for d in devices}
    assert added == {(d, 5): 2 for d in devices}


def test_lenet_sync_calls_once_per_parameter_or_once(monkeypatch):
    """Per parameter, one run of time_lenet_sync reduces LeNet's 8 arrays
    one by one; bucketed, it reduces one array of all 8 arrays' values."""
    import mxnet as mx

    import d2lpar as dp

    monkeypatch.setattr(
        ab, 'median_seconds', lambda fn, repeats, warmup: fn() or 1.0
    )
    sizes = [p.size for p in dp.init_lenet_params()]
    for bucket, want in ((False, sizes), (True, [sum(sizes)])):
        calls = []
        ab.time_lenet_sync(
            lambda data, calls=calls: calls.append(data[0].size),
            [mx.cpu(0), mx.cpu(1)],
            bucket,
        )
        assert calls == want


def test_ring_trace_figure():
    """k=4: a start panel, 3 reduce-scatter and 3 all-gather panels."""
    fig = figures.draw_ring_trace(4)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ['start'] + [f'reduce-scatter {i}' for i in (1, 2, 3)] + [
        f'all-gather {i}' for i in (1, 2, 3)
    ]


def test_bench_devices_falls_back_to_cpu_contexts(monkeypatch):
    """Where d2lpar.devices cannot give k devices (one GPU, asked for
    2), k distinct CPU contexts stand in, with a note saying why."""
    import mxnet as mx

    def one_gpu(n):
        raise ValueError(f'devices: asked for {n} GPUs but MXNet sees only 1')

    monkeypatch.setattr(ab, 'default_devices', one_gpu)
    devices, note = ab.bench_devices(2)
    assert devices == [mx.cpu(0), mx.cpu(1)]
    assert 'sees only 1' in note and '[cpu(0), cpu(1)]' in note
    monkeypatch.undo()
    assert ab.bench_devices(1)[1] is None


def test_every_benchmarked_algorithm_sums():
    """Every timed algorithm, the reused-buffer naive one included, is a
    real allreduce: all three arrays end as the sum."""
    import mxnet as mx
    import numpy as onp
    from mxnet import np

    inputs = [onp.arange(7.0) * (i + 1) for i in range(3)]
    for name, algorithm in ab.ALGORITHMS.items():
        data = [np.array(x, ctx=mx.cpu(i)) for i, x in enumerate(inputs)]
        algorithm(data)
        for a in data:
            onp.testing.assert_allclose(a.asnumpy(), sum(inputs), err_msg=name)


def _rows(k, nbytes, seconds):
    return [
        dict(devices=k, bytes=nbytes, algorithm=name, seconds=s)
        for name, s in seconds.items()
    ]


def test_targets_verdicts_and_reasons():
    """Targets are judged on the ring (never the faster of two rows
    doing the same work), only from 16 MB up; the speed-up over the
    naive one is split into two factors whose product is the whole; the
    copy line names the copy+add reference's ratio."""
    times = {
        'copy': 1.0,
        'copy+add': 2.0,
        'naive': 12.0,
        'naive (reused)': 6.0,
        'sharded': 2.0,  # faster, but not the ring
        'ring': 2.5,
        'doubling': 3.5,
        'kvstore device': 2.0,
        'kvstore local': 4.0,
    }
    rows = _rows(2, 1_000_000, times) + _rows(2, 64_000_000, times)
    lines = ab.allreduce_targets(rows)
    assert len(lines) == 3 and all(
        l.startswith('k=2 64 MB: ring ') for l in lines
    )
    copy, naive, kv = lines
    assert '0.40x vs copy' in copy and copy.endswith('missed')
    assert '(the copy+add reference reached 0.50x)' in copy
    assert '4.80x vs naive = 2.0x from reused buffers * 2.4x' in naive
    assert naive.endswith('target 3.0x: met')
    assert '0.80x vs kvstore device' in kv and kv.endswith('missed')
    assert ab.allreduce_targets(_rows(2, 1_000_000, times)) == []


def test_measure_allreduce_times_one_call_per_row_and_round(monkeypatch):
    """A round of measure_allreduce is a single call of each row (the
    buckets page contrasts it with its own median of five calls): every
    timing asks for one repeat, and each row is timed once per round."""
    asked = []
    monkeypatch.setattr(
        ab,
        'median_seconds',
        lambda fn, repeats, warmup: asked.append(repeats) or 1.0,
    )
    rows = ab.measure_allreduce((2,), (4_000,), repeats=3, progress=None)
    assert set(asked) == {1}
    assert len(asked) == 3 * len(rows)
    assert all(r['runs'] == [1.0] * 3 for r in rows)
