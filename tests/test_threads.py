"""Per-device thread budgets (d2lpar/threads.py)."""

import os
import subprocess
import sys
import textwrap

import pytest

import d2lpar as dp
from d2lpar import threads


def run_fresh(code, env=None, timeout=120):
    """Run ``code`` in a fresh interpreter; return its last stdout line."""
    full_env = dict(os.environ, **(env or {}))
    out = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def test_total_threads_reads_omp_num_threads(monkeypatch):
    monkeypatch.setenv('OMP_NUM_THREADS', '3')
    assert threads.total_threads() == 3
    monkeypatch.setenv('OMP_NUM_THREADS', 'garbage')
    assert threads.total_threads() == threads.available_cores()
    monkeypatch.delenv('OMP_NUM_THREADS')
    assert threads.total_threads() == len(os.sched_getaffinity(0))


def test_mxnet_starts_each_worker_at_one_thread():
    # The default the budget changes: one thread per device.
    env = {'OMP_NUM_THREADS': ''}
    code = """
        import d2lpar as dp
        print(dp.worker_threads(dp.devices(2)[1]))
    """
    assert run_fresh(code, env) == '1'


def test_one_device_gets_every_core_and_two_devices_one_each():
    code = """
        import d2lpar as dp
        one = dp.thread_budget(dp.devices(1))
        seen_one = dp.worker_threads(dp.devices(1)[0])
        dp.thread_budget(dp.devices(2))
        seen_two = [dp.worker_threads(d) for d in dp.devices(2)]
        print(list(one.values()), seen_one, seen_two)
    """
    total = threads.available_cores()
    line = run_fresh(code, {'OMP_NUM_THREADS': ''})
    assert line == f'[{total}] {total} [1, 1]'


def test_train_batch_applies_the_budget():
    code = """
        import numpy as onp
        from mxnet import np
        import d2lpar as dp
        devices = dp.devices(3)
        rng = onp.random.default_rng(0)
        X = np.array(rng.uniform(size=(12, 1, 28, 28)), dtype='float32')
        y = np.array(rng.integers(0, 10, 12), dtype='int32')
        params = dp.init_lenet_params(0, 0.1)
        replicas = [dp.get_params(params, d) for d in devices]
        dp.train_batch(X, y, replicas, devices, 0.1)
        three = [dp.worker_threads(d) for d in devices]
        dp.train_batch(X, y, replicas[:1], devices[:1], 0.1)
        print(three, dp.worker_threads(devices[0]))
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': '6'})
    assert line == '[1, 1, 1] 6'  # each worker started with 6


def test_two_devices_with_omp_num_threads_2_finish_and_match_one_device():
    # The trap: OMP_NUM_THREADS=2 gives every worker two threads, and two
    # devices then call OpenBLAS's threaded matrix product at the same
    # time, which spins forever. Under the budget each device has one.
    code = """
        import numpy as onp
        from mxnet import np, npx
        import d2lpar as dp
        rng = onp.random.default_rng(0)
        X = np.array(rng.uniform(size=(64, 1, 28, 28)), dtype='float32')
        y = np.array(rng.integers(0, 10, 64), dtype='int32')
        finals = []
        for k in (1, 2):
            devices = dp.devices(k)
            params = dp.init_lenet_params(0, 0.1)
            replicas = [dp.get_params(params, d) for d in devices]
            for _ in range(5):
                dp.train_batch(X, y, replicas, devices, 0.1)
            npx.waitall()
            finals.append([p.asnumpy() for p in replicas[-1]])
        print(max(float(abs(a - b).max()) for a, b in zip(*finals)))
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': '2'}, timeout=180)
    assert float(line) < 1e-5


def test_budget_skips_gpu_contexts():
    import mxnet as mx

    assert dp.thread_budget([mx.gpu(0)]) == {}


@pytest.mark.parametrize('k', [1, 2])
def test_budget_is_cheap_to_repeat(k):
    # The second call changes nothing and pushes nothing.
    devices = dp.devices(k)
    first = dp.thread_budget(devices)
    calls = []
    original = threads.run_on_worker
    try:
        threads.run_on_worker = lambda *a: calls.append(a)
        assert dp.thread_budget(devices) == first
    finally:
        threads.run_on_worker = original
    assert calls == []


def test_without_openmp_warns_once_and_keeps_one_thread(monkeypatch):
    monkeypatch.setattr(threads, '_openmp', lambda: None)
    monkeypatch.setattr(threads, '_APPLIED', {})
    monkeypatch.setattr(threads, '_WARNED', [])
    devices = dp.devices(1)
    with pytest.warns(UserWarning, match='no OpenMP runtime'):
        assert dp.thread_budget(devices) == {devices[0]: 1}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert dp.thread_budget(devices) == {devices[0]: 1}  # no warning


def test_one_device_at_a_time_never_leaves_two_threaded_devices():
    # Training each device in its own call (as local SGD does) gives each
    # all cores in turn; the previous one is lowered to one thread first,
    # so no two devices run threaded products at once (they would hang).
    code = """
        import numpy as onp
        from mxnet import np, npx
        import d2lpar as dp
        devices = dp.devices(2)
        rng = onp.random.default_rng(0)
        X = np.array(rng.uniform(size=(32, 1, 28, 28)), dtype='float32')
        y = np.array(rng.integers(0, 10, 32), dtype='int32')
        params = dp.init_lenet_params(0, 0.1)
        replicas = [dp.get_params(params, d) for d in devices]
        for _ in range(4):
            for d, p in zip(devices, replicas):
                dp.train_batch(X, y, [p], [d], 0.1)
        npx.waitall()
        print([dp.worker_threads(d) for d in devices])
    """
    total = threads.total_threads()
    line = run_fresh(code, {'OMP_NUM_THREADS': ''}, timeout=180)
    assert line == f'[1, {total}]'
