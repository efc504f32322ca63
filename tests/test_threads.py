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


@pytest.mark.parametrize(
    'machine, procs, env, forked, want',
    [
        ('x86_64', 16, {}, False, 8),  # half the processors on x86
        ('AMD64', 16, {}, False, 8),
        ('x86_64', 2, {}, False, 1),  # this book's machine
        ('x86_64', 1, {}, False, 1),  # half of 1 is no cap: 1
        ('aarch64', 16, {}, False, 16),  # every processor elsewhere
        ('x86_64', 16, {'OMP_NUM_THREADS': '3'}, False, 3),
        ('x86_64', 16, {'OMP_NUM_THREADS': '3,2'}, False, 3),
        ('x86_64', 16, {'OMP_NUM_THREADS': ''}, False, 8),  # empty: unset
        ('x86_64', 16, {'MXNET_OMP_MAX_THREADS': '4'}, False, 4),
        ('x86_64', 16, {'MXNET_OMP_MAX_THREADS': '32'}, False, 16),
        ('x86_64', 16, {'MXNET_OMP_MAX_THREADS': '0'}, False, 16),
        ('x86_64', 16, {'MXNET_OMP_MAX_THREADS': '-1'}, False, 1),
        ('x86_64', 16, {}, True, 1),  # a forked child: OpenMP use off
        ('x86_64', 16, {'OMP_NUM_THREADS': '3'}, True, 3),
    ],
)
def test_mxnet_default_threads_follows_mxnets_rules(
    monkeypatch, machine, procs, env, forked, want
):
    # src/engine/openmp.cc of MXNet 1.9.1, on any machine.
    for name in ('OMP_NUM_THREADS', 'MXNET_OMP_MAX_THREADS'):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(threads.platform, 'machine', lambda: machine)
    monkeypatch.setattr(threads, 'available_cores', lambda: procs)
    assert threads.mxnet_default_threads(forked=forked) == want


@pytest.mark.parametrize(
    'env',
    [
        {'OMP_NUM_THREADS': '', 'MXNET_OMP_MAX_THREADS': ''},
        {'OMP_NUM_THREADS': '', 'MXNET_OMP_MAX_THREADS': '0'},
        {'OMP_NUM_THREADS': '3', 'MXNET_OMP_MAX_THREADS': '1'},
    ],
)
def test_a_fresh_worker_has_mxnet_default_threads(env):
    # MXNet itself, on this machine: a context d2lpar never touched, in
    # the process and in a forked child. On 2 cores the first two
    # settings differ (1 and 2), so a rule that ignores either fails.
    code = """
        import os
        import d2lpar as dp
        from mxnet import npx
        fresh = dp.worker_threads(npx.cpu(1))
        pid = os.fork()
        if pid == 0:
            os._exit(dp.worker_threads(npx.cpu(2)))
        _, status = os.waitpid(pid, 0)
        print(fresh, dp.threads.mxnet_default_threads(),
              os.waitstatus_to_exitcode(status),
              dp.threads.mxnet_default_threads(forked=True))
    """
    fresh, rule, child, child_rule = run_fresh(code, env).split()
    assert (fresh, child) == (rule, child_rule)


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


def test_one_device_gets_every_core_and_k_devices_a_share_each():
    # OMP_NUM_THREADS=4: every worker starts at 4, on any machine, so
    # the shares can be seen on 2 cores (nothing heavy runs here).
    code = """
        import d2lpar as dp
        seen = []
        for k in (1, 2, 3, 4):
            budget = dp.thread_budget(dp.devices(k))
            workers = [dp.worker_threads(d) for d in dp.devices(k)]
            seen.append(list(budget.values()) == workers and workers)
        print(seen)
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': '4'})
    assert line == '[[4], [2, 2], [1, 1, 1], [1, 1, 1, 1]]'


def test_import_gives_cpu0_every_core():
    # Before anything runs on it, so that it never needs raising later.
    code = """
        import d2lpar as dp
        from mxnet import npx
        print(dp.worker_threads(npx.cpu(0)))
    """
    total = threads.available_cores()
    assert run_fresh(code, {'OMP_NUM_THREADS': ''}) == str(total)


def test_train_batch_applies_the_budget():
    code = """
        import numpy as onp
        import d2lpar as dp
        from mxnet import np
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
    line = run_fresh(code, {'OMP_NUM_THREADS': '6'}, timeout=300)
    assert line == '6 [2, 2, 2]'  # each worker started with 6


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
        kept = ('keeps 1 of the 2 OpenMP threads asked for'
                in str(first[0].message)
                and first[0].category is dp.ThreadBudgetWarning)
        print(list(again.values()), dp.worker_threads(dp.devices(1)[0]),
              len(first), kept, len(second))
    """
    # Every worker starts at 2 (on any machine); two devices get 1 each.
    line = run_fresh(code, {'OMP_NUM_THREADS': '2'})
    assert line == '[1] 1 1 True 0'


def test_one_device_after_several_in_one_process_does_not_crash():
    # Before the budget refused to raise a worker, this crashed 3 times
    # out of 3 (SIGSEGV, or glibc's "free(): invalid next size"): cpu(0)
    # built its oneDNN operators for one thread beside cpu(1), then ran
    # the same shapes (the evaluation batch) with two.
    code = """
        import numpy as onp
        import d2lpar as dp
        from mxnet import np, npx
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
    share = max(1, threads.available_cores() // 2)  # what k = 2 left
    assert line == f'finished on {share} thread'


@pytest.mark.parametrize('omp, processes', [('', 2), ('', 1), ('1', 2)])
def test_share_cores_gives_each_process_its_share(omp, processes):
    # The worker of a k-process job: cores // k threads, or the user's
    # OMP_NUM_THREADS, and its device's worker really has that many.
    code = f"""
    import d2lpar as dp
    import mxnet as mx
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


@pytest.mark.parametrize('per_device', [0, -1])
def test_bad_per_device_is_refused(per_device):
    with pytest.raises(ValueError, match=f'per_device={per_device}'):
        dp.thread_budget(dp.devices(2), per_device=per_device)


def test_several_devices_may_have_several_threads_each():
    code = """
        import d2lpar as dp
        devices = dp.devices(2)
        budget = dp.thread_budget(devices, per_device=2)
        print(list(budget.values()), [dp.worker_threads(d) for d in devices])
    """
    line = run_fresh(code, {'OMP_NUM_THREADS': '2'})
    assert line == '[2, 2] [2, 2]'


def test_lenet_runs_no_openblas_product():
    # The trap: two devices running OpenBLAS's threaded product (np.dot)
    # at the same time spin in exec_blas forever. LeNet's forward and
    # backward must not call it; the profiler lists every operator run
    # (checked on a plain np.dot first, so that a missed name fails).
    code = """
        import json
        import os
        import d2lpar as dp
        import mxnet as mx
        from mxnet import autograd, np, npx

        def operators(fn):
            mx.profiler.set_config(profile_imperative=True,
                                   aggregate_stats=True,
                                   filename=os.devnull)
            mx.profiler.set_state('run')
            fn()
            npx.waitall()
            mx.profiler.set_state('stop')
            table = json.loads(mx.profiler.dumps(format='json', reset=True))
            return set(table['Time']['operator'])

        params = dp.init_lenet_params(0, 0.1)
        for p in params:
            p.attach_grad()
        X = np.ones((4, 1, 28, 28))

        def step():
            with autograd.record():
                loss = dp.lenet(X, params).sum()
            loss.backward()

        control = operators(lambda: np.dot(np.ones((4, 8)), np.ones((8, 2))))
        ops = operators(step)
        print(any('dot' in op for op in control),
              sorted(op for op in ops if 'dot' in op or 'FullyC' in op))
    """
    line = run_fresh(code)
    assert line == "True ['FullyConnected', '_backward_FullyConnected']"


def test_two_devices_with_two_threads_each_train_lenet_without_hanging():
    # The trap's setting: two devices with two threads each (every worker
    # starts at 4, the budget gives each 4 // 2). With np.dot in LeNet
    # this spun forever here; with oneDNN's product it finishes, and
    # computes what one thread each does (OMP_NUM_THREADS=2), up to the
    # rounding of sums taken in another order by more threads: within 1%
    # of how far the steps moved the parameters (losing one device's
    # gradient would move them half as far).
    code = """
        import numpy as onp
        import d2lpar as dp
        from mxnet import np, npx
        rng = onp.random.default_rng(0)
        X = np.array(rng.uniform(size=(64, 1, 28, 28)), dtype='float32')
        y = np.array(rng.integers(0, 10, 64), dtype='int32')
        devices = dp.devices(2)
        params = dp.init_lenet_params(0, 0.1)
        replicas = [dp.get_params(params, d) for d in devices]
        for _ in range(2):
            dp.train_batch(X, y, replicas, devices, 0.1)
        npx.waitall()
        flat = onp.concatenate([p.asnumpy().ravel() for p in replicas[1]])
        start = onp.concatenate([p.asnumpy().ravel() for p in params])
        print(*[dp.worker_threads(d) for d in devices],
              *map(repr, start[::97]), *map(repr, flat[::97]))
    """
    env = {'OMP_WAIT_POLICY': 'PASSIVE'}  # no spinning on a busy machine
    two = run_fresh(code, dict(env, OMP_NUM_THREADS='4'), timeout=240)
    one = run_fresh(code, dict(env, OMP_NUM_THREADS='2'), timeout=240)
    assert two.split()[:2] == ['2', '2'] and one.split()[:2] == ['1', '1']
    start, two = onp.split(onp.array(two.split()[2:], dtype=float), 2)
    one = onp.split(onp.array(one.split()[2:], dtype=float), 2)[1]
    moved = abs(one - start).max()
    assert moved > 1e-3
    onp.testing.assert_allclose(two, one, rtol=0, atol=0.01 * moved)


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


def test_one_device_at_a_time_keeps_each_workers_threads():
    # Training each device in its own call: cpu(0), given every core at
    # import, keeps them; cpu(1) ran at MXNet's default before the
    # budget first saw it, so it is not raised (it would crash).
    code = """
        import numpy as onp
        import d2lpar as dp
        from mxnet import np, npx
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
        cores = dp.threads.available_cores()
        print(*[dp.worker_threads(d) for d in devices], cores,
              dp.threads.mxnet_default_threads())
    """
    env = {'OMP_NUM_THREADS': '', 'MXNET_OMP_MAX_THREADS': ''}
    cpu0, cpu1, cores, default = run_fresh(code, env, timeout=180).split()
    assert (cpu0, cpu1) == (cores, default)
