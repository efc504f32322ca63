"""Multi-process training on ps-lite, on loopback (slow: processes).

Every launch here has a time limit; a hang fails the test instead of
blocking CI.
"""

import socket
import subprocess
import sys

import pytest
from workerjobs import (
    check_equals_one_process,
    check_resume_matches_uninterrupted,
)

from d2lpar.bench import engines as be
from d2lpar.comm.costmodel import engine_bytes
from d2lpar.multiprocess.launcher import launch

pytestmark = pytest.mark.slow
PY = sys.executable


def run_launch(args, timeout=180):
    return subprocess.run(
        [PY, '-m', 'd2lpar', 'launch', *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def launched(*launch_args):
    """``run(worker_args)`` for :mod:`workerjobs`: 2 workers on ps-lite."""
    return lambda args: run_launch(
        [
            '--workers',
            '2',
            *launch_args,
            '--timeout',
            '150',
            '--',
            PY,
            '-m',
            'd2lpar',
            'worker',
            *args,
        ]
    )


@pytest.mark.parametrize('kvstore', ['dist_sync', 'dist_device_sync'])
def test_two_workers_equal_one_process_with_twice_the_batch(tmp_path, kvstore):
    """2 workers with batch b equal one process with batch 2b (see
    workerjobs), with either kvstore (dist_device_sync sums on the
    workers' devices: CPU contexts here)."""
    check_equals_one_process(launched('--kvstore', kvstore), tmp_path)


def test_resume_reaches_the_uninterrupted_parameters(tmp_path):
    """Training 1 epoch, then resuming to 3, equals 3 epochs."""
    check_resume_matches_uninterrupted(launched(), tmp_path)


def test_bad_launches_are_clear_errors():
    """A busy port, no worker command and zero workers are refused at
    once with a message saying what to do."""
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=f'port {port} .* in use'):
            launch(['true'], port=port)
    with pytest.raises(ValueError, match='no worker command'):
        launch([])
    with pytest.raises(ValueError, match='at least 1 worker'):
        launch(['true'], workers=0)
    run = run_launch(['--workers', '0', '--', 'true'], timeout=60)
    assert run.returncode == 2 and 'at least 1 worker' in run.stderr


def test_missing_worker_command_program():
    """A worker program that does not exist fails the launch (status
    127-like), naming the worker, instead of leaving ps-lite waiting."""
    run = run_launch(
        ['--workers', '1', '--timeout', '60', '--', 'no-such-program-d2lpar'],
        timeout=90,
    )
    assert run.returncode != 0
    assert 'worker 0' in run.stderr


def test_parameter_server_bytes_per_step():
    """Per step on loopback, 2 workers and 1 server move 2kN = 4N bytes:
    each worker pushes its N bytes of gradients and pulls N back."""
    row = be.measure_engine(
        'kvstore', workers=2, batch_size=64, steps=10, num_test=64
    )
    n = be.gradient_bytes()
    assert row['bytes_per_step'] is not None, 'no network namespace here'
    _, low, high = engine_bytes('kvstore', 2, n)
    assert low <= row['bytes_per_step'] < high
