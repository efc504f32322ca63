"""The same worker on Horovod (gloo, loopback): the optional extra.

Selected with ``-m horovod`` (``make test-horovod`` builds Horovod first).
Every job runs under a time limit.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import write_fashion_dir
from workerjobs import (
    check_equals_one_process,
    check_resume_matches_uninterrupted,
)

import d2lpar as dp
from d2lpar.bench import engines as be
from d2lpar.comm.costmodel import engine_bytes
from d2lpar.multiprocess.checkpoint import load_checkpoint

pytestmark = pytest.mark.horovod
PY = sys.executable


def horovodrun(args, workers=2, timeout=180):
    command = be.engine_command('horovod', workers, args)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout
    )


def test_horovod_is_built_with_mxnet_and_gloo():
    import horovod.mxnet  # noqa: F401  (fails without MXNet support)
    from horovod.common.util import gloo_built

    assert gloo_built()
    assert 'horovod' in be.available_engines()


def test_two_workers_equal_one_process_with_twice_the_batch(tmp_path):
    """2 Horovod workers with batch b equal one process with batch 2b,
    as the parameter-server workers do (see workerjobs)."""
    job = check_equals_one_process(horovodrun, tmp_path)
    assert 'rank 1/2 epoch 2' in job.stdout


def test_resume_reaches_the_uninterrupted_parameters(tmp_path):
    """1 epoch, then --resume to 3, equals 3 uninterrupted epochs."""
    check_resume_matches_uninterrupted(horovodrun, tmp_path)


def test_failing_worker_ends_the_job(tmp_path):
    """A worker exiting with status 3: horovodrun stops the job within
    seconds, exits non-zero and names the process and its status."""
    script = tmp_path / 'fail.py'
    script.write_text(
        'import sys, horovod.mxnet as hvd, mxnet as mx\n'
        'hvd.init()\n'
        'if hvd.rank() == 1: sys.exit(3)\n'
        'hvd.allreduce_(mx.np.ones(3), name="x")\n'
    )
    start = time.time()
    command = be.engine_command('horovod', 2, [])
    command = command[: command.index('--gloo') + 1] + [PY, str(script)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert 'Process name: 1' in run.stderr and 'Exit code: 3' in run.stderr
    assert time.time() - start < 60


def test_ring_sends_half_the_bytes_of_one_parameter_server():
    """Per step on loopback, 2 Horovod workers send 2(k-1)N = 2N bytes in
    all (ring all-reduce); the parameter-server test checks its 2kN."""
    row = be.measure_engine(
        'horovod', workers=2, batch_size=64, steps=10, num_test=64
    )
    n = be.gradient_bytes()
    assert row['bytes_per_step'] is not None, 'no network namespace here'
    _, low, high = engine_bytes('horovod', 2, n)
    assert low <= row['bytes_per_step'] < high


def test_killed_worker_ends_the_job_and_leaves_a_checkpoint(tmp_path):
    """SIGKILL one Horovod worker mid-run: horovodrun ends the job within
    10 s, exits non-zero naming process 1, no worker survives, and rank
    0's last checkpoint loads."""
    import psutil  # a dependency of Horovod

    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=64, n_test=16)
    checkpoint = tmp_path / 'ckpt.npz'
    command = be.engine_command(
        'horovod',
        2,
        [
            '--epochs',
            '100000',
            '--batch-size',
            '16',
            '--data',
            str(root),
            '--save-to',
            str(checkpoint),
        ],
    )
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in proc.stdout:
            if 'rank 1/2 epoch 2:' in line:
                break
        workers = [
            p
            for p in psutil.Process(proc.pid).children(True)
            if 'worker' in p.cmdline()
        ]
        rank1 = [p for p in workers if p.environ().get('HOROVOD_RANK') == '1']
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
    assert not any(
        p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in workers
    )
    params, epoch = load_checkpoint(str(checkpoint))
    assert epoch >= 1 and [p.shape for p in params] == [
        shape for _, shape in dp.LENET_SHAPES
    ]


def processes_with(token):
    """Pids of the processes whose environment holds ``token``."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f'/proc/{entry}/environ', 'rb') as f:
                if token.encode() in f.read():
                    found.append(int(entry))
        except OSError:  # ended while we looked, or a zombie
            continue
    return found


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_wrapper_stops_every_horovod_process(tmp_path, sig):
    """SIGTERM or SIGINT to a process that runs horovodrun through the
    project's wrapper (run_counting_bytes, as `bench engines` does) ends
    it within 30 s, and no process of the job survives: not horovodrun,
    not the workers it starts in sessions of their own."""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=64, n_test=16)
    args = ['--epochs', '100000', '--batch-size', '16', '--data', str(root)]
    code = (
        'from d2lpar.bench.engines import engine_command\n'
        'from d2lpar.multiprocess.loopback import run_counting_bytes\n'
        f'run_counting_bytes(engine_command("horovod", 2, {args!r}), 300)\n'
    )
    token = f'd2lpar-test-{uuid.uuid4().hex}'
    wrapper = subprocess.Popen(
        [PY, '-c', code],
        env=dict(os.environ, D2LPAR_TEST_TOKEN=token),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in wrapper.stdout:
        if 'epoch 2:' in line:
            break
    assert len(processes_with(token)) >= 4  # wrapper, horovodrun, 2 workers
    start = time.monotonic()
    wrapper.send_signal(sig)
    try:
        wrapper.communicate(timeout=60)
    finally:
        wrapper.kill()
    assert time.monotonic() - start < 30
    # Ended by the signal itself, as with no handler (python ends an
    # uncaught KeyboardInterrupt by SIGINT too).
    assert wrapper.returncode == -sig
    time.sleep(1)
    assert processes_with(token) == []


@pytest.mark.skipif(
    dp.multiprocess.why_not(2) is not None,
    reason='two emulated hosts need root here',
)
def test_horovod_runs_across_two_emulated_hosts():
    """The printed multi-host command, horovodrun -H HOST1:1,HOST2:1,
    trains across two namespaces (ssh stand-in, per-host /etc/hosts),
    and its ring sends about N per step each way over the link."""
    row = be.run_job('horovod', 2, 64, 8 * 128, 64, 120, hosts=2)
    assert row['steps'] == 8
    n = be.gradient_bytes()
    # 2(k-1)/k N per worker per step, both ways: 2N over the link per
    # step, plus start-up and evaluation (a bound, not a count).
    assert 8 * 2 * n <= row['bytes'] < 8 * 2 * n * 1.6
