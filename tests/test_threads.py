"""Per-device thread budgets (d2lpar/threads.py)."""

import os

import numpy as onp
import pytest
from conftest import run_fresh

import d2lpar as dp
from d2lpar import threads


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


@pytest.mark.skipif(
    threads.available_cores() < 2, reason='needs 2 cores to tell apart'
)
def test_budget_comes_back_at_once_after_a_fork():
    """A fork restarts MXNet's workers at one thread (its atfork
    handlers); the budget is applied again before anything else runs on
    them, for every device that had one, and a forked child keeps
    MXNet's default."""
    code = """
        import os, subprocess
        import d2lpar as dp
        cpu0, cpu1 = dp.devices(2)
        dp.thread_budget([cpu0])
        dp.worker_threads(cpu1)  # cpu(1)'s worker exists, unbudgeted
        subprocess.run(['true'], preexec_fn=lambda: None, check=True)
        after = dp.worker_threads(cpu0)
        pid = os.fork()
        if pid == 0:  # the child: its budget is MXNet's default
            os._exit(dp.thread_budget([cpu0])[cpu0])
        _, status = os.waitpid(pid, 0)
        print(after, os.waitstatus_to_exitcode(status))
    """
    total = threads.available_cores()
    line = run_fresh(code, {'OMP_NUM_THREADS': ''})
    assert line == f'{total} 1'


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


def test_import_gives_cpu0_every_core():
    # Before anything runs on it, so that it never needs raising later.
    code = """
        from mxnet import npx
        import d2lpar as dp
        print(dp.worker_threads(npx.cpu(0)))
    """
    total = threads.available_cores()
    assert run_fresh(code, {'OMP_NUM_THREADS': ''}) == str(total)


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
        dp.train_batch(X, y, replicas[:1], devices[:1], 0.1)
        one = dp.worker_threads(devices[0])
        dp.train_batch(X, y, replicas, devices, 0.1)
        print(one, [dp.worker_threads(d) for d in devices])
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': '6'})
    assert line == '6 [1, 1, 1]'  # each worker started with 6


def test_a_device_that_had_one_thread_is_not_raised_and_warns_once():
    code = """
        import warnings
        import d2lpar as dp
        dp.thread_budget(dp.devices(2))
        with warnings.catch_warnings(record=True) as first:
            warnings.simplefilter('always')
            again = dp.thread_budget(dp.devices(1))
        with warnings.catch_warnings(record=True) as second:
            warnings.simplefilter('always')
            dp.thread_budget(dp.devices(1))
        kept = ('keeps 1 thread(s) instead of' in str(first[0].message)
                and first[0].category is dp.ThreadBudgetWarning)
        print(list(again.values()), dp.worker_threads(dp.devices(1)[0]),
              len(first), kept, len(second))
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': ''})
    assert line == '[1] 1 1 True 0'


def test_one_device_after_several_in_one_process_does_not_crash():
    # Before the budget refused to raise a worker, this crashed 3 times
    # out of 3 (SIGSEGV, or glibc's "free(): invalid next size"): cpu(0)
    # built its oneDNN operators for one thread beside cpu(1), then ran
    # the same shapes (the evaluation batch) with two.
    code = """
        import numpy as onp
        from mxnet import np, npx
        import d2lpar as dp
        rng = onp.random.default_rng(0)
        def batch():
            return (
                np.array(rng.uniform(size=(256, 1, 28, 28)), dtype='float32'),
                np.array(rng.integers(0, 10, 256), dtype='int32'),
            )
        data = [batch() for _ in range(7)]
        for k in (2, 1):
            dp.train(devices=dp.devices(k), data=(data, data[:1]),
                     num_epochs=2, plot=False, verbose=False)
        npx.waitall()
        print('finished on', dp.worker_threads(npx.cpu(0)), 'thread')
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': ''}, timeout=300)
    assert line == 'finished on 1 thread'


@pytest.mark.parametrize('omp, processes', [('', 2), ('', 1), ('1', 2)])
def test_share_cores_gives_each_process_its_share(omp, processes):
    # The worker of a k-process job: cores // k threads, or the user's
    # OMP_NUM_THREADS, and its device's worker really has that many.
    code = f"""
    import mxnet as mx
    import d2lpar as dp
    n = dp.threads.share_cores({processes})
    print(n, dp.worker_threads(mx.cpu(0)), dp.threads.available_cores())
    """
    n, applied, cores = map(
        int, run_fresh(code, {'OMP_NUM_THREADS': omp}).split()
    )
    want = int(omp) if omp else max(1, cores // processes)
    assert (n, applied) == (want, want)


def test_share_cores_refuses_no_processes():
    with pytest.raises(ValueError, match='num_processes=0'):
        threads.share_cores(0)


@pytest.mark.parametrize('per_device', [0, 2])
def test_bad_per_device_is_refused(per_device):
    with pytest.raises(ValueError, match=f'per_device={per_device}'):
        dp.thread_budget(dp.devices(2), per_device=per_device)


def test_two_devices_with_omp_num_threads_2_finish_as_with_one_thread():
    # The trap: OMP_NUM_THREADS=2 gives every worker two threads, and two
    # devices then call OpenBLAS's threaded matrix product at the same
    # time, which spins forever. Under the budget each device has one, so
    # the run finishes and computes exactly what one thread each does.
    # (That k devices equal one device is tests/test_training.py's job:
    # after 5 steps of this size oneDNN's sums for batch 32 and 64 drift
    # apart by 1e-3 on this machine's AMD EPYC; without oneDNN, 1e-8.)
    code = """
        import numpy as onp
        from mxnet import np, npx
        import d2lpar as dp
        rng = onp.random.default_rng(0)
        X = np.array(rng.uniform(size=(64, 1, 28, 28)), dtype='float32')
        y = np.array(rng.integers(0, 10, 64), dtype='int32')
        devices = dp.devices(2)
        params = dp.init_lenet_params(0, 0.1)
        replicas = [dp.get_params(params, d) for d in devices]
        for _ in range(5):
            dp.train_batch(X, y, replicas, devices, 0.1)
        npx.waitall()
        flat = onp.concatenate([p.asnumpy().ravel() for p in replicas[1]])
        print(dp.worker_threads(devices[0]), ' '.join(map(repr, flat[:50])))
    """
    two = run_fresh(code, {'OMP_NUM_THREADS': '2'}, timeout=180).split()
    one = run_fresh(code, {'OMP_NUM_THREADS': '1'}, timeout=180).split()
    assert two[0] == one[0] == '1'
    onp.testing.assert_allclose(
        [float(v) for v in two[1:]], [float(v) for v in one[1:]], rtol=1e-6
    )


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
    # Training each device in its own call: cpu(0), given every core at
    # import, keeps them; cpu(1) ran at MXNet's one thread before the
    # budget first saw it, so it is not raised. Never two threaded devices
    # (they would hang), never a raised worker (it would crash).
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
    assert line == f'[{total}, 1]'
