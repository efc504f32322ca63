"""d2lpar.torch.bench: the FLOPs, the product's rate, the step's rounds
and its profile in PyTorch, as tests/test_bench_limit.py and
tests/test_bench_profile.py check MXNet's."""

import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402
from d2lpar.torch import bench  # noqa: E402


def test_lenet_flops_counts_every_product():
    """PyTorch's FLOP counter finds the book's count: multiply-adds of
    LeNet's layers, forward once, backward twice, less the first layer's
    input gradient, 2 operations each."""
    macs = [20 * 1 * 3 * 3 * 26 * 26, 50 * 20 * 5 * 5 * 9 * 9, 800 * 128,
            128 * 10]  # fmt: skip
    expected = 2 * (3 * sum(macs) - macs[0])
    assert bench.lenet_flops() == expected
    assert bench.lenet_flops(256) == 256 * expected
    conv = 2 * (2 * macs[0] + 3 * macs[1])
    assert bench.lenet_flops(layers='conv') == conv
    assert bench.lenet_flops(layers='dense') == expected - conv


def test_lenet_flops_agree_with_mxnets_count():
    pytest.importorskip('mxnet')
    from d2lpar.bench import limit

    for layers in (None, 'conv', 'dense'):
        assert bench.lenet_flops(64, layers) == limit.lenet_flops(64, layers)


def test_the_timed_product_is_a_full_matrix_product():
    A, B = torch.randn(2, 16, 16, generator=torch.Generator().manual_seed(0))
    for fn in bench.products(A, B).values():
        torch.testing.assert_close(fn(), A @ B)


def test_matmul_rate_is_two_n_cubed_over_the_median(monkeypatch):
    """The product really runs (an n x n result) on the threads asked
    for; the rate is 2 n**3 operations over its median seconds."""
    n, seen = 32, []

    def median_seconds(fn, repeats, warmup, wait):
        seen.append((fn().shape, torch.get_num_threads()))
        return 0.25

    monkeypatch.setattr(bench, '_median_seconds', median_seconds)
    assert bench.matmul_rate(n, repeats=1, count=1) == 2 * n**3 / 0.25 / 1e9
    assert seen == [((n, n), 1)]


def test_threads_are_set_for_the_block_and_put_back():
    before = torch.get_num_threads()
    with bench.threads(1) as used:
        assert used == torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ZeroDivisionError):
        with bench.threads(1):
            raise ZeroDivisionError
    assert torch.get_num_threads() == before
    with bench.threads() as used:
        assert used == bench.every_core()


def test_compare_steps_alternates_the_order_by_round(monkeypatch):
    """Every setting once per round, in order in even rounds and reversed
    in odd ones, each on its devices and threads; ms per round."""
    calls, seconds = [], iter([0.001 * i for i in range(1, 7)])

    def time_steps(k, batch_size, repeats, warmup, count):
        calls.append((k, count))
        return next(seconds)

    monkeypatch.setattr(bench, 'time_steps', time_steps)
    ms = bench.compare_steps({'a': (1, None), 'b': (2, 1)}, rounds=3)
    assert calls == [(1, None), (2, 1), (2, 1), (1, None), (1, None), (2, 1)]
    assert ms == {'a': pytest.approx([1, 4, 5]), 'b': pytest.approx([2, 3, 6])}


def test_compare_steps_times_each_setting_at_its_own_batch(monkeypatch):
    """A setting's third entry is its batch size (the label only names
    the row); a setting without one runs at ``batch_size``."""
    calls = []

    def time_steps(k, batch_size, repeats, warmup, count):
        calls.append((k, batch_size, count))
        return 0.001

    monkeypatch.setattr(bench, 'time_steps', time_steps)
    settings = {64: (1, None, 64), 256: (1, None, 256), 'x': (2, 1)}
    bench.compare_steps(settings, rounds=2, batch_size=32)
    assert calls == [(1, 64, None), (1, 256, None), (2, 32, 1),
                     (2, 32, 1), (1, 256, None), (1, 64, None)]  # fmt: skip


def test_time_steps_runs_the_step_on_its_threads():
    before = torch.get_num_threads()
    assert bench.time_steps(2, batch_size=8, repeats=1, warmup=0, count=1) > 0
    assert torch.get_num_threads() == before


def test_profile_training_gives_every_configuration_in_order():
    """Results under their labels, in order, each on its own threads
    (put back after), with the four phases, the step's operators (a
    convolution among them), every plain step and phase sum kept, the
    limit at the rate of the same process, and the product on the
    setting's own threads where they are fewer than the cores."""
    before = torch.get_num_threads()
    configs = (('two', 2, None), ('one, 1 thread', 1, 1))
    result = bench.profile_training(configs, batch_size=16, steps=2)
    assert torch.get_num_threads() == before
    assert list(result) == ['two', 'one, 1 thread']
    cores = bench.every_core()
    assert result['two']['threads'] == [cores, cores]
    assert result['one, 1 thread']['threads'] == [1]
    few = result['one, 1 thread']
    assert ('gflops_own' in few) == (cores > 1)
    assert 'gflops_own' not in result['two']
    flops = bench.lenet_flops(16)
    for r in result.values():
        assert set(r['phases']) == {'forward', 'backward', 'allreduce',
                                    'update'}  # fmt: skip
        assert bench.by_kind(r['operators'])['convolution'] > 0
        assert len(r['step_times']) == len(r['phase_sums']) == 2
        assert r['step_ms'] == pytest.approx(sum(r['step_times']) / 2)
        assert r['waiting'] == pytest.approx(
            max(0.0, sum(r['phases'].values()) - r['step_ms'])
        )
        assert r['limit_ms'] == pytest.approx(
            1000 * flops / (r['gflops'] * 1e9)
        )
        # One operator at a time: they fit in the profiled step.
        assert sum(r['operators'].values()) <= r['profiled_ms']
    if 'gflops_own' in few:
        assert few['limit_own_ms'] == pytest.approx(
            1000 * flops / (few['gflops_own'] * 1e9)
        )
    text = bench.format_profile(result)
    assert 'two: step' in text and 'on its own threads' in text
    assert 'phase by phase' in text and 'waitall' not in text


def test_kernel_implementations_name_the_convolutions_both_ways():
    rows = bench.kernel_implementations(batch_size=8)
    kinds = {kind for primitive, _, kind, _ in rows
             if primitive == 'convolution'}  # fmt: skip
    assert 'forward_training' in kinds and 'backward_weights' in kinds


def test_the_twin_reaches_it_as_dp_bench():
    assert tdp.bench is bench


def test_it_needs_no_mxnet():
    """A student's PyTorch notebook has no MXNet: the module, its FLOP
    count, verdicts and profile table load without it."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['mxnet'] = None\n"
        'from d2lpar import torch as dp\n'
        'print(dp.bench.lenet_flops(2), '
        'dp.bench.compare_times([1.0], [2.0]))\n'
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(bench.lenet_flops(2)), 'faster', 'than']
