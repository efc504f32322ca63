"""d2lpar.bench.train: d2l's way vs the library's, beside the FLOP limit."""

import multiprocessing
import statistics
import time

import numpy as onp
import pytest
from mxnet import np

import d2lpar as dp
from d2lpar.bench import step as bench_step
from d2lpar.bench import train as bt
from tests.conftest import write_fashion_dir


def test_lenet_flops_counts_every_product():
    """Multiply-adds of LeNet's layers, from their output sizes (26x26 and
    9x9 after the convolutions): forward once, backward twice, less the
    first layer's input gradient; 2 operations each."""
    macs = [20 * 1 * 3 * 3 * 26 * 26, 50 * 20 * 5 * 5 * 9 * 9, 800 * 128,
            128 * 10]  # fmt: skip
    expected = 2 * (3 * sum(macs) - macs[0])
    assert bt.lenet_flops() == expected
    assert bt.lenet_flops(256) == 256 * expected
    conv = 2 * (2 * macs[0] + 3 * macs[1])
    assert bt.lenet_flops(layers='conv') == conv
    assert bt.lenet_flops(layers='dense') == expected - conv


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


PROFILE_TABLE = """Profile Statistics:
operator
=================
Name                          Total Count        Time (ms)    Min Time (ms)    Max Time (ms)    Avg Time (ms)
----                          -----------        ---------    -------------    -------------    -------------
_backward_Convolution                  20         575.2400           8.6020          53.6180          28.7620
Pooling                                20         242.9100           4.5430          19.8110          12.1455

"""


def test_operator_ms_divides_totals_by_steps_largest_first():
    ops = bt._operator_ms(PROFILE_TABLE, 10)
    assert list(ops) == ['_backward_Convolution', 'Pooling']
    assert ops['Pooling'] == pytest.approx(24.291)


def test_format_training_ratios():
    rows = [
        dict(path='d2l', devices=1, ms_per_step=100.0, limit_ms=20.0,
             ratio=5.0, rounds=[100.0]),
        dict(path='d2lpar', devices=1, ms_per_step=50.0, limit_ms=20.0,
             ratio=2.5, rounds=[50.0]),
    ]  # fmt: skip
    text = bt.format_training(
        dict(rows=rows, flops_per_step=3.4e9, gflops=170.0, cores=2,
             batch_size=256)
    )  # fmt: skip
    last = text.splitlines()[-2].split()
    assert last[-2:] == ['2.50x', '2.00x']  # x limit, speed-up vs d2l
    ranged = bt.format_training(
        dict(rows=rows, flops_per_step=3.4e9, gflops=160.0,
             gflops_rounds=[150.0, 160.0, 172.0], cores=2, batch_size=256)
    )  # fmt: skip
    assert (
        'at 160 GFLOP/s (matrix product on 2 cores, median of 3 runs: '
        '150-172)' in ranged.splitlines()[0]
    )


def test_format_profile_gives_each_step_against_its_own_limit():
    profile = {
        'one': dict(step_ms=60.0, limit_ms=30.0, gflops=113.0,
                    phases={'forward': 20.0, 'backward': 40.0},
                    operators={'Convolution': 12.5}),
    }  # fmt: skip
    first, op = bt.format_profile(profile).splitlines()
    assert first.startswith(
        'one: step 60.0 ms = 2.0x the limit (30.0 ms at 113 GFLOP/s, '
        'measured in the same process)'
    )
    assert first.endswith('forward 20.0, backward 40.0 (ms)')
    assert op.split() == ['Convolution', '12.5', 'ms/step']


def test_format_profile_sums_the_operators_it_does_not_name():
    ops = {'Convolution': 10.0, 'Pooling': 6.0, 'relu': 3.0, 'add': 1.0}
    profile = {
        'one': dict(step_ms=60.0, limit_ms=30.0, gflops=113.0,
                    phases={'forward': 60.0}, operators=ops),
    }  # fmt: skip
    lines = bt.format_profile(profile, top=2).splitlines()
    assert [line.split()[0] for line in lines[1:3]] == [
        'Convolution',
        'Pooling',
    ]
    assert lines[3].split() == ['2', 'other', 'operators', '4.0', 'ms/step']
    assert len(lines) == 4


def _starts_a_process():
    child = multiprocessing.get_context('spawn').Process(
        target=time.sleep, args=(0,)
    )
    child.start()
    child.join()
    return child.exitcode


def _raises():
    raise KeyError('from the child')


def test_fresh_process_may_start_processes_and_passes_errors_back():
    # d2l's loader starts worker processes: a daemonic child could not.
    assert bench_step._in_fresh_process({}, _starts_a_process, (), 120) == 0
    with pytest.raises(KeyError, match='from the child'):
        bench_step._in_fresh_process({}, _raises, (), 120)


def test_fresh_process_that_runs_too_long_is_stopped():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match='sleep'):
        bench_step._in_fresh_process({}, time.sleep, (60,), 3)
    assert time.monotonic() - start < 30


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
    # The limit's rate is measured in each child (one per path and round)
    # and the median is used.
    assert len(result['gflops_rounds']) == 2
    assert result['gflops'] == pytest.approx(
        statistics.median(result['gflops_rounds'])
    )
    limit = 1000 * bt.lenet_flops(16) / (result['gflops'] * 1e9)
    for r in rows:
        assert r['limit_ms'] == pytest.approx(limit)
        # One round: its ratio is over the limit its own child measured.
        own = (
            1000
            * bt.lenet_flops(16)
            / (result['gflops_rounds'][0 if r['path'] == 'd2l' else 1] * 1e9)
        )
        assert r['ratio'] == pytest.approx(r['ms_per_step'] / own)
        assert r['ms_per_step'] == r['rounds'][0]


def test_operator_labels_show_in_a_legend():
    # matplotlib drops labels that start with an underscore
    assert bt.operator_label('_backward_Convolution') == (
        'Convolution (backward)'
    )
    assert bt.operator_label('_npx_relu') == 'relu'
    assert bt.operator_label('_backward_np_dot') == 'dot (backward)'
    assert bt.operator_label('Pooling') == 'Pooling'


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


@pytest.mark.slow
def test_profile_training_gives_every_configuration_in_order():
    """The budgeted configurations share a process, the unbudgeted one
    has its own, and each ran with its own threads (no budget leaks from
    one to the next); results come back under their labels, in order,
    each with all four phases and the step's operators (convolutions
    among them), and waiting is what the synchronised phases add."""
    from d2lpar.threads import available_cores

    configs = (('two', 2, True), ('one, 1 thread', 1, False),
               ('one', 1, True))  # fmt: skip
    result = bt.profile_training(configs, batch_size=16, steps=2)
    assert list(result) == ['two', 'one, 1 thread', 'one']
    assert result['two']['threads'] == [1, 1]
    assert result['one, 1 thread']['threads'] == [1]
    assert result['one']['threads'] == [available_cores()]
    for r in result.values():
        assert set(r['phases']) == {'forward', 'backward', 'allreduce',
                                    'update'}  # fmt: skip
        assert 'Convolution' in r['operators']
        assert r['waiting'] == pytest.approx(
            max(0.0, sum(r['phases'].values()) - r['step_ms'])
        )
        # the limit at the rate measured in the same process
        assert r['limit_ms'] == pytest.approx(
            1000 * bt.lenet_flops(16) / (r['gflops'] * 1e9)
        )


def test_compare_training_alternates_paths_and_device_counts(monkeypatch):
    """Round r runs the paths in order on even r, reversed on odd r, and
    one device first in every process; each child's results land in its
    own path's rows."""
    calls = []

    def child(env, fn, arg_list, timeout):
        path = arg_list[0][1]
        calls.append((path, [a[2] for a in arg_list[:-1]]))
        seconds = [0.1 if path == 'd2lpar' else 0.2 for _ in arg_list[:-1]]
        return seconds + [100.0]  # the steps, then the rate

    monkeypatch.setattr(bt, 'in_fresh_process_each', child)
    result = bt.compare_training((1, 2, 4), steps=1, rounds=3)
    assert calls == [
        ('d2l', [1, 2, 4]), ('d2lpar', [1, 2, 4]),
        ('d2lpar', [1, 4, 2]), ('d2l', [1, 4, 2]),
        ('d2l', [1, 2, 4]), ('d2lpar', [1, 2, 4]),
    ]  # fmt: skip
    ms = {(r['path'], r['devices']): r['rounds'] for r in result['rows']}
    assert ms['d2lpar', 4] == [100.0] * 3 and ms['d2l', 2] == [200.0] * 3
