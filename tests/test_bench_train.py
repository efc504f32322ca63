"""d2lpar.bench.train: d2l's way vs the library's, beside the FLOP limit."""

import os

import numpy as onp
import pytest
from mxnet import np

import d2lpar as dp
from d2lpar.bench import train as bt
from d2lpar.bench.limit import lenet_flops
from tests.conftest import write_fashion_dir


def _batch(n, seed=0):
    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(n, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, n), dtype='int32')
    return X, y


def test_d2l_allreduce_leaves_the_sum_everywhere():
    devices = dp.devices(3)
    data = [np.full((5,), i + 1.0, ctx=d) for i, d in enumerate(devices)]
    bt.d2l_allreduce(data)
    for a in data:
        assert onp.allclose(a.asnumpy(), 6.0)


def test_d2l_step_is_the_library_step():
    """The baseline trains the same model the same way: after 3 steps on
    2 devices its parameters equal train_batch's (float tolerance)."""
    devices = dp.devices(2)
    X, y = _batch(32)
    finals = []
    for step in (bt.d2l_train_batch, dp.train_batch):
        params = dp.init_lenet_params(0, 0.1)
        replicas = [dp.get_params(params, d) for d in devices]
        for _ in range(3):
            step(X, y, replicas, devices, 0.1)
        finals.append([p.asnumpy() for p in replicas[1]])
    for a, b in zip(*finals):
        assert onp.allclose(a, b, atol=1e-5)


def test_compare_training_rejects_an_unknown_path():
    with pytest.raises(ValueError, match="unknown path 'fast'"):
        bt.compare_training((1,), paths=('fast',))


def test_format_training_ratios():
    rows = [
        dict(path='d2l', devices=1, ms_per_step=100.0, limit_ms=20.0,
             ratio=5.0, rounds=[100.0]),
        dict(path='d2lpar', devices=1, ms_per_step=50.0, limit_ms=20.0,
             ratio=2.5, rounds=[48.0, 50.0, 53.0]),
    ]  # fmt: skip
    text = bt.format_training(
        dict(rows=rows, flops_per_step=3.4e9, gflops=170.0, cores=2,
             batch_size=256)
    )  # fmt: skip
    last = text.splitlines()[-2].split()
    # x limit, speed-up vs d2l, then every round in order
    assert last[-5:] == ['2.50x', '2.00x', '48.0', '50.0', '53.0']
    ranged = bt.format_training(
        dict(rows=rows, flops_per_step=3.4e9, gflops=160.0,
             gflops_runs=[150.0, 160.0, 172.0], cores=2, batch_size=256)
    )  # fmt: skip
    assert (
        'at 160 GFLOP/s (the faster matrix product on 2 cores, best of '
        '3 runs: 150-172)' in ranged.splitlines()[0]
    )


@pytest.mark.slow
def test_compare_training_measures_each_path_and_device_count(
    isolated_data, monkeypatch
):
    write_fashion_dir(str(isolated_data / 'fm'), n_train=64, n_test=16)
    monkeypatch.setenv('D2LPAR_DATA', str(isolated_data / 'fm'))
    result = bt.compare_training((1, 2), batch_size=16, steps=2, rounds=1)
    rows = result['rows']
    assert sorted((r['path'], r['devices']) for r in rows) == [
        ('d2l', 1), ('d2l', 2), ('d2lpar', 1), ('d2lpar', 2)
    ]  # fmt: skip
    # The limit's rate: 3 runs in a process of its own, then one in
    # each round's process (2 paths x 1 round); the best run counts.
    assert len(result['gflops_runs']) == 3 + 2
    assert result['gflops'] == max(result['gflops_runs'])
    limit = 1000 * lenet_flops(16) / (result['gflops'] * 1e9)
    for r in rows:
        assert r['limit_ms'] == pytest.approx(limit)
        assert r['ratio'] == pytest.approx(r['ms_per_step'] / limit)
        assert r['ms_per_step'] == r['rounds'][0]


def test_compare_rounds_needs_every_round_apart():
    def row(path, k, rounds):
        return dict(path=path, devices=k, rounds=rounds)

    result = dict(
        rows=[
            row('d2l', 1, [10.0, 12.0]),
            row('d2lpar', 1, [7.0, 9.0]),
            row('d2lpar', 2, [8.5, 11.0]),
        ]
    )
    assert bt.compare_rounds(result, ('d2lpar', 1), ('d2l', 1)) == (
        'faster than'
    )
    assert bt.compare_rounds(result, ('d2l', 1), ('d2lpar', 1)) == (
        'slower than'
    )
    assert bt.compare_rounds(result, ('d2lpar', 2), ('d2lpar', 1)) == (
        'not clearly different from'
    )


def test_compare_training_alternates_paths_and_device_counts(monkeypatch):
    """Round r runs the paths in order on even r, reversed on odd r, and
    one device first in every process; each child's results land in its
    own path's rows; the limit's rate is the best of the runs before the
    rounds and the one each round's process adds after its steps."""
    calls = []

    def child(env, fn, arg_list, timeout):
        if fn is bt._rates:  # the limit, once, before the rounds
            calls.append('limit')
            return [[100.0, 160.0, 120.0]]
        assert fn is bt._round and len(arg_list) == 1
        path, counts, _, _, after = arg_list[0]
        assert not after  # compare_training's default
        calls.append((path, counts))
        rate = 170.0 if len(calls) == 4 else 90.0  # one round ran faster
        secs = [0.1 if path == 'd2lpar' else 0.2 for _ in counts]
        return [(secs, rate, None)]

    monkeypatch.setattr(bt, 'in_fresh_process_each', child)
    result = bt.compare_training((1, 2, 4), steps=1, rounds=3)
    assert (
        result['gflops_runs']
        == [100.0, 160.0, 120.0] + [90.0] * 2 + [170.0] + [90.0] * 3
    )
    assert result['gflops'] == 170.0
    limit = 1000 * lenet_flops(256) / 170e9
    assert all(r['limit_ms'] == pytest.approx(limit) for r in result['rows'])
    assert calls.pop(0) == 'limit'
    assert calls == [
        ('d2l', [1, 2, 4]), ('d2lpar', [1, 2, 4]),
        ('d2lpar', [1, 4, 2]), ('d2l', [1, 4, 2]),
        ('d2l', [1, 2, 4]), ('d2lpar', [1, 2, 4]),
    ]  # fmt: skip
    ms = {(r['path'], r['devices']): r['rounds'] for r in result['rows']}
    assert ms['d2lpar', 4] == [100.0] * 3 and ms['d2l', 2] == [200.0] * 3


def test_after_measures_one_device_last_on_the_library_path(monkeypatch):
    """With ``after``, each round's d2lpar process (never d2l's) trains
    one device once more after every device count; those times form
    their own row, printed in the table, and the rows are unchanged."""
    calls, lines = [], []

    def child(env, fn, arg_list, timeout):
        if fn is bt._rates:
            return [[150.0]]
        path, counts, _, steps, after = arg_list[0]
        calls.append((path, after))
        secs = [0.1 if path == 'd2lpar' else 0.2 for _ in counts]
        later = (0.3 + 0.1 * len(calls), 'cpu(2)') if after else None
        return [(secs, 150.0, later)]

    monkeypatch.setattr(bt, 'in_fresh_process_each', child)
    result = bt.compare_training(
        (1, 2), steps=2, rounds=2, after=True, progress=lines.append
    )
    assert calls == [('d2l', False), ('d2lpar', True),
                     ('d2lpar', True), ('d2l', False)]  # fmt: skip
    after = result['after']
    # 0.5 s and 0.6 s per pass of 2 steps (calls 2 and 3)
    assert after['rounds'] == pytest.approx([250.0, 300.0])
    assert after['ms_per_step'] == pytest.approx(275.0)
    assert after['ratio'] == pytest.approx(275.0 / after['limit_ms'])
    assert after['device'] == 'cpu(2)'  # as the rounds' processes said
    assert {(r['path'], r['devices']) for r in result['rows']} == {
        ('d2l', 1),
        ('d2l', 2),
        ('d2lpar', 1),
        ('d2lpar', 2),
    }
    assert 'round 1/2: d2lpar on 1 device again, after the others: 250.0' in (
        '\n'.join(lines)
    )
    table = bt.format_training(result)
    assert '   d2lpar  1 again     275.0' in table, table
    assert '250.0 300.0' in table
    assert 'had not trained there (cpu(2))' in table
    assert 'after' not in bt.compare_training((1, 2), steps=2, rounds=1)


def test_after_row_stays_beside_pytorchs_rows(monkeypatch):
    """`bench train` asks for both: PyTorch's rows must not replace the
    one device measured last."""
    _fake_torch(monkeypatch, seconds=0.1, threads=2, mxnet=False)
    result = bt.compare_training(
        (1, 2), steps=2, rounds=1, torch=True, after=True
    )
    assert result['after']['rounds'] == pytest.approx([150.0])  # 0.3 s / 2
    assert 'ratios' in result and 'torch_threads' in result


def test_a_round_measures_one_device_again_last(monkeypatch):
    """_round picks the device for the last measurement before anything
    trains, measures every count in order, then one device on it."""
    import mxnet as mx

    done = []
    monkeypatch.setattr(
        bt, '_after_device', lambda counts: done.append('pick') or mx.cpu(9)
    )

    def seconds(path, k, batch_size, steps, devices=None):
        done.append((k, devices))
        return 0.1 * len(done)

    monkeypatch.setattr(bt, '_epoch_seconds', seconds)
    monkeypatch.setattr(bt, 'rate_on_every_core', lambda: 99.0)
    got = bt._round('d2lpar', [1, 4, 2], 8, 2, True)
    assert done == ['pick', (1, None), (4, None), (2, None), (1, [mx.cpu(9)])]
    assert got[:2] == (pytest.approx([0.2, 0.3, 0.4]), 99.0)
    assert got[2] == (pytest.approx(0.5), 'cpu(9)')
    done.clear()
    assert bt._round('d2lpar', [1, 2], 8, 2)[2] is None
    assert done == [(1, None), (2, None)]


def test_the_device_measured_last_is_unused_and_has_every_core():
    """On CPU contexts: one no count used (cpu(max)), whose worker got
    every core (not MXNet's default, which a device keeps)."""
    import mxnet as mx

    from d2lpar import threads

    ctx = bt._after_device([1, 11])
    assert ctx == mx.cpu(11)
    if threads._openmp() is not None:
        assert threads.worker_threads(ctx) == threads.total_threads()


def _fake_torch(monkeypatch, **got):
    """MXNet's rounds faked by :func:`_fake_mxnet`, PyTorch installed, and
    every PyTorch measurement returning ``got`` in one process."""
    from d2lpar.bench import torch_train

    monkeypatch.setattr(bt, 'in_fresh_process_each', _fake_mxnet([]))
    monkeypatch.setattr(torch_train, 'torch_missing', lambda: None)
    monkeypatch.setattr(
        torch_train, 'measure', lambda *a: dict(processes=1, **got)
    )


def _fake_mxnet(calls):
    """An in_fresh_process_each that records MXNet's rounds: 0.1 s per
    pass for d2lpar, 0.2 s for d2l, 150 GFLOP/s."""

    def child(env, fn, arg_list, timeout):
        if fn is bt._rates:
            return [[150.0]]
        path, counts, _, steps, after = arg_list[0]
        calls.append((path, tuple(counts)))
        secs = [0.1 if path == 'd2lpar' else 0.2 for _ in counts]
        # the one device measured last: 0.3 s per pass
        return [(secs, 150.0, (0.3, 'cpu(2)') if after else None)]

    return child


def test_torch_rows_are_interleaved_with_mxnet_rows(monkeypatch):
    """Each PyTorch row is measured once per round, in the round's
    alternating order (after MXNet's on even rounds, before on odd);
    its ms/step is its own pass over the steps; every ratio is taken
    round by round."""
    from d2lpar.bench import torch_train

    calls = []
    monkeypatch.setattr(bt, 'in_fresh_process_each', _fake_mxnet(calls))
    seconds = {('torch', 1): 0.08, ('torch', 2): 0.09, ('torch-ddp', 2): 0.06}

    def measure(path, k, batch_size, steps, timeout):
        calls.append((path, k))
        threads = 1 if path == 'torch-ddp' else 2
        return dict(seconds=seconds[path, k] * (len(calls) % 3 + 1),
                    threads=threads, processes=3 - threads, mxnet=False)  # fmt: skip

    monkeypatch.setattr(torch_train, 'torch_missing', lambda: None)
    monkeypatch.setattr(torch_train, 'measure', measure)
    result = bt.compare_training((1, 2), steps=2, rounds=2, torch=True)
    mx = [('d2l', (1, 2)), ('d2lpar', (1, 2))]
    pt = [('torch', 1), ('torch', 2), ('torch-ddp', 2)]
    assert calls == mx + pt + pt[::-1] + mx[::-1]
    ms = {(r['path'], r['devices']): r['rounds'] for r in result['rows']}
    # calls 3, 4, 5 in round 1; 6, 7, 8 in round 2 (ddp first)
    assert ms['torch', 1] == pytest.approx(
        [1000 * 0.08 * 1 / 2, 1000 * 0.08 * 3 / 2]
    )
    assert ms['torch-ddp', 2] == pytest.approx(
        [1000 * 0.06 * 3 / 2, 1000 * 0.06 * 1 / 2]
    )
    assert result['torch_threads'] == {
        'torch 1': 2,
        'torch 2': 2,
        'torch-ddp 2': 1,
    }
    ratios = {f['label']: f['rounds'] for f in result['ratios']}
    hand = ratios['hand-written PyTorch step / DDP, 2 devices']
    assert hand == pytest.approx(
        [ms['torch', 2][i] / ms['torch-ddp', 2][i] for i in (0, 1)]
    )
    text = bt.format_training(result)
    assert 'torch-ddp: each process' in text
    assert 'PyTorch threads per process (set explicitly): torch 1: 2' in text
    assert 'MXNet library / PyTorch, 1 device: ' in text


def test_a_pytorch_process_that_imported_mxnet_is_an_error(monkeypatch):
    _fake_torch(monkeypatch, seconds=1.0, threads=1, mxnet=True)
    with pytest.raises(RuntimeError, match='imported MXNet'):
        bt.compare_training((1,), steps=2, rounds=1, torch=True)


def test_without_pytorch_its_rows_are_skipped_with_a_line(monkeypatch):
    """Where torch cannot be imported, MXNet's rows are measured, no
    PyTorch process starts, and the skip is printed and in the table."""
    import sys

    from d2lpar.bench import torch_train

    monkeypatch.setitem(sys.modules, 'torch', None)  # as if not installed

    def never(*args):
        raise AssertionError('a PyTorch row was measured without torch')

    monkeypatch.setattr(torch_train, 'measure', never)
    calls, lines = [], []
    monkeypatch.setattr(bt, 'in_fresh_process_each', _fake_mxnet(calls))
    result = bt.compare_training(
        (1, 2), steps=2, rounds=1, torch=True, progress=lines.append
    )
    skip = 'PyTorch rows skipped: torch is not installed'
    assert any(line.startswith(skip) for line in lines)
    assert {r['path'] for r in result['rows']} == {'d2l', 'd2lpar'}
    assert len(calls) == 2
    assert bt.format_training(result).splitlines()[-1].startswith(skip)


@pytest.mark.slow
def test_bench_train_prints_pytorch_rows_beside_mxnet(
    isolated_data, monkeypatch, tmp_path, capsys
):
    """The command line with a quick setting: every PyTorch row, measured
    in processes without MXNet, with its threads, and the ratios."""
    pytest.importorskip('torch')
    from d2lpar import cli

    write_fashion_dir(str(isolated_data / 'fm'), n_train=64, n_test=16)
    monkeypatch.setenv('D2LPAR_DATA', str(isolated_data / 'fm'))
    out_json = tmp_path / 'train.json'
    assert cli.main(
        ['bench', 'train', '--devices', '1', '2', '--batch-size', '16',
         '--steps', '2', '--rounds', '1', '--json', str(out_json)]
    ) == 0  # fmt: skip
    out = capsys.readouterr().out
    cores = len(os.sched_getaffinity(0))
    half = max(1, cores // 2)

    def each(n):
        return f'{n} thread{"s" if n > 1 else ""} each'

    for row in (
        f'torch on 1 device (1 process, {each(cores)})',
        f'torch on 2 devices (1 process, {each(cores)})',
        f'torch-ddp on 2 devices (2 processes, {each(half)})',
    ):
        assert row in out, out
    table = [line.split() for line in out.splitlines()]
    rows = {(t[0], t[1]) for t in table if len(t) > 5}
    assert {('torch', '1'), ('torch', '2'), ('torch-ddp', '2')} <= rows
    assert 'hand-written PyTorch step / DDP, 2 devices: ' in out
    assert 'PyTorch rows skipped' not in out


def test_a_rounds_process_reads_the_data_once(isolated_data, monkeypatch):
    """One round's process measures every device count in turn: the
    files are read and decoded once (both paths), the library's
    iterator is made once per batch size, d2l's loader anew each time."""
    from mxnet import gluon

    import d2lpar.data

    write_fashion_dir(str(isolated_data / 'fm'), n_train=64, n_test=16)
    monkeypatch.setenv('D2LPAR_DATA', str(isolated_data / 'fm'))
    monkeypatch.setattr(bt, '_READ', {})
    reads, read_split = [], d2lpar.data.read_split

    def counting(directory, split):
        reads.append(split)
        return read_split(directory, split)

    monkeypatch.setattr(d2lpar.data, 'read_split', counting)
    ours = [bt._data(16, 2, 0) for _ in range(3)]
    assert ours[0] is ours[1] is ours[2] and reads == ['train', 'test']
    assert [len(X) for X, _ in ours[0]] == [16, 16]
    assert bt._data(8, 2, 0) is not ours[0] and len(reads) == 4
    monkeypatch.setattr(gluon.data, 'DataLoader', lambda *a, **k: (a, k))
    d2ls = [bt._data(16, 2, 3) for _ in range(2)]
    assert reads == ['train', 'test', 'train', 'test', 'train']
    assert d2ls[0] is not d2ls[1] and d2ls[0][1]['num_workers'] == 3
    assert len(d2ls[0][0][0]) == 32
