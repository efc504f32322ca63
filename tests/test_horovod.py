"""The same worker on Horovod (gloo, loopback): the optional extra.

Selected with ``-m horovod`` (``make test-horovod`` builds Horovod first).
Every job runs under a time limit.
"""
import subprocess
import sys
import time

import mxnet as mx
import numpy as onp
import pytest
from numpy.testing import assert_allclose

import d2lpar as dp
from conftest import write_fashion_dir
from d2lpar import bench_engines as be
from d2lpar.worker import load_checkpoint

pytestmark = pytest.mark.horovod
PY = sys.executable


def horovodrun(args, workers=2, timeout=180):
    command = be.engine_command('horovod', workers, args)
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=timeout)


def test_horovod_is_built_with_mxnet_and_gloo():
    import horovod.mxnet  # noqa: F401  (fails without MXNet support)
    from horovod.common.util import gloo_built
    assert gloo_built()
    assert 'horovod' in be.available_engines()


def test_two_workers_equal_one_process_with_twice_the_batch(tmp_path):
    """2 Horovod workers with 16 examples each per step end with the
    parameters of one process taking steps of 32 (rtol 1e-5), as the
    parameter-server workers do."""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=96, n_test=16)
    saved = tmp_path / 'params.npz'
    run = horovodrun(['--epochs', '2', '--batch-size', '16', '--lr', '0.1',
                      '--data', str(root), '--save-to', str(saved)])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert 'rank 1/2 epoch 2' in run.stdout
    got, epochs = load_checkpoint(str(saved))
    assert epochs == 2
    start = dp.init_lenet_params(0, 0.1)
    data = dp.load_fashion_mnist(32, str(root), seed=0)
    params = dp.get_params(start, mx.cpu(0))
    for _ in range(2):
        for X, y in data[0]:
            dp.train_batch(X, y, [params], [mx.cpu(0)], 0.1)
    assert onp.abs(params[4].asnumpy() - start[4].asnumpy()).max() > 1e-4
    for g, p in zip(got, params):
        assert_allclose(g.asnumpy(), p.asnumpy(), rtol=1e-5, atol=1e-6)


def test_resume_reaches_the_uninterrupted_parameters(tmp_path):
    """1 epoch, then --resume to 3, equals 3 uninterrupted epochs."""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=64, n_test=16)
    full, part = tmp_path / 'full.npz', tmp_path / 'part.npz'
    base = ['--batch-size', '16', '--data', str(root)]
    for extra in (['--epochs', '3', '--save-to', str(full)],
                  ['--epochs', '1', '--save-to', str(part)],
                  ['--epochs', '3', '--save-to', str(part), '--resume']):
        run = horovodrun(base + extra)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert 'resuming after epoch 1' in run.stdout
    want, want_epoch = load_checkpoint(str(full))
    got, got_epoch = load_checkpoint(str(part))
    assert got_epoch == want_epoch == 3
    for g, w in zip(got, want):
        assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-6, atol=1e-7)


def test_failing_worker_ends_the_job(tmp_path):
    """A worker exiting with status 3: horovodrun stops the job within
    seconds, exits non-zero and names the process and its status."""
    script = tmp_path / 'fail.py'
    script.write_text('import sys, horovod.mxnet as hvd, mxnet as mx\n'
                      'hvd.init()\n'
                      'if hvd.rank() == 1: sys.exit(3)\n'
                      'hvd.allreduce_(mx.np.ones(3), name="x")\n')
    start = time.time()
    command = be.engine_command('horovod', 2, [])
    command = command[:command.index('--gloo') + 1] + [PY, str(script)]
    run = subprocess.run(command, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0
    assert 'Process name: 1' in run.stderr and 'Exit code: 3' in run.stderr
    assert time.time() - start < 60


def test_ring_sends_half_the_bytes_of_one_parameter_server():
    """Per step on loopback, 2 Horovod workers send 2(k-1)N = 2N bytes in
    all (ring all-reduce); the parameter-server test checks its 2kN."""
    row = be.measure_engine('horovod', workers=2, batch_size=64,
                            steps=(5, 25), num_test=64)
    n = be.gradient_bytes()
    assert row['bytes_per_step'] is not None, 'no network namespace here'
    # Fixed costs (start-up, Horovod's rendezvous) vary a little from
    # job to job and leak into the difference: allow 5% below the model.
    assert 0.95 * 2 * n <= row['bytes_per_step'] < 2.3 * n


def test_killed_worker_ends_the_job_and_leaves_a_checkpoint(tmp_path):
    """SIGKILL one Horovod worker mid-run: horovodrun ends the job within
    10 s, exits non-zero naming process 1, no worker survives, and rank
    0's last checkpoint loads."""
    import psutil  # a dependency of Horovod
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=64, n_test=16)
    checkpoint = tmp_path / 'ckpt.npz'
    command = be.engine_command('horovod', 2, [
        '--epochs', '100000', '--batch-size', '16', '--data', str(root),
        '--save-to', str(checkpoint)])
    proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if 'rank 1/2 epoch 2:' in line:
                break
        workers = [p for p in psutil.Process(proc.pid).children(True)
                   if 'worker' in p.cmdline()]
        rank1 = [p for p in workers
                 if p.environ().get('HOROVOD_RANK') == '1']
        assert len(workers) == 2 and len(rank1) == 1
        rank1[0].kill()
        killed = time.time()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.time() - killed < 10
    assert proc.returncode != 0
    assert 'Process name: 1' in err and 'Exit code: 137' in err
    time.sleep(0.5)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                   for p in workers)
    params, epoch = load_checkpoint(str(checkpoint))
    assert epoch >= 1 and [p.shape for p in params] == \
        [shape for _, shape in dp.LENET_SHAPES]
