"""Fault injection: whatever fails, the job ends in seconds, names the
culprit, and leaves no process and a checkpoint that loads (slow:
each case starts a ps-lite job).
"""

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import write_fashion_dir

import d2lpar as dp
from d2lpar.multiprocess.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow
PY = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))
ENDS_WITHIN = 30  # seconds from the fault to the launcher's exit
# 96 training examples, 16 per worker: 3 steps per epoch.
STEPS_PER_EPOCH, EPOCHS = 3, 2

# A plain user script: one ps-lite worker that pushes and pulls forever.
FOREVER = """
import mxnet as mx
kv = mx.kv.create("dist_sync")
a = mx.nd.ones(3)
kv.init(0, a)
print("ready", flush=True)
while True:
    kv.push(0, a)
    kv.pull(0, out=a)
    a.wait_to_read()
"""


def job_sessions(pids):
    """Processes still alive in the sessions the launcher started.

    Every process the launcher starts leads a session of its own, which
    its children inherit: a survivor anywhere in the tree shows here.
    """
    left = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:  # ended while we looked
            continue
        state, session = fields[0], int(fields[3])
        if session in pids and state != 'Z':
            left.append(int(entry))
    return left


class Job:
    """A launcher run in the background, its processes and output."""

    def __init__(self, worker_command, workers=2, timeout=120):
        self.proc = subprocess.Popen(
            [
                PY,
                '-m',
                'd2lpar',
                'launch',
                '--workers',
                str(workers),
                '--timeout',
                str(timeout),
                '--',
                *worker_command,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.pids, self.lines = {}, []

    def wait_for(self, text, times=1):
        """Read output until ``times`` lines contain ``text``."""
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith('launch: started'):
                name, pid = line.split(' as pid ')
                self.pids[name.replace('launch: started ', '')] = int(pid)
            if text in line:
                times -= 1
                if times == 0:
                    return line
        raise AssertionError(
            f'the job ended before printing {text!r}:\n'
            + ''.join(self.lines[-30:])
        )

    def end(self, fault_time):
        """Wait for the launcher; check it ended in time, nothing left."""
        try:
            _, err = self.proc.communicate(timeout=ENDS_WITHIN + 30)
        finally:
            self.proc.kill()
        took = time.monotonic() - fault_time
        assert took < ENDS_WITHIN, f'job took {took:.0f} s to end'
        assert self.proc.returncode != 0
        time.sleep(0.5)
        assert job_sessions(set(self.pids.values())) == []
        return err


def training(tmp_path, fault_rank=None, fault_step=None):
    """The worker command, with a fault injected if asked."""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=32 * STEPS_PER_EPOCH, n_test=16)
    args = [
        '--epochs',
        str(EPOCHS),
        '--batch-size',
        '16',
        '--data',
        str(root),
        '--save-to',
        str(tmp_path / 'ckpt.npz'),
    ]
    if fault_rank is None:
        return [PY, '-m', 'd2lpar', 'worker', *args]
    return [
        PY,
        os.path.join(HERE, 'faultworker.py'),
        str(fault_rank),
        str(fault_step),
        '--',
        *args,
    ]


def assert_checkpoint_loads(tmp_path, epochs):
    path = tmp_path / 'ckpt.npz'
    if epochs == 0:
        assert not path.exists()
        return
    params, done = load_checkpoint(
        str(path), 2, [s for _, s in dp.LENET_SHAPES]
    )
    assert done == epochs and len(params) == len(dp.LENET_SHAPES)


@pytest.mark.parametrize(
    'step, epochs_saved',
    [
        (0, 0),  # at start
        (STEPS_PER_EPOCH + 1, 1),  # mid-epoch
        (EPOCHS * STEPS_PER_EPOCH - 1, EPOCHS - 1),
    ],  # at the last step
    ids=['start', 'mid-epoch', 'last-step'],
)
def test_worker_raising(tmp_path, step, epochs_saved):
    """Rank 1 raises at a step: the job ends with the worker's status
    (the command line's 2 for an error) and its message, although
    ps-lite would keep the process alive."""
    job = Job(training(tmp_path, fault_rank=1, fault_step=step))
    culprit = job.wait_for('injecting a fault').split(']')[0][1:]
    err = job.end(time.monotonic())
    assert job.proc.returncode == 2
    assert (
        f'launch: {culprit} (pid {job.pids[culprit]}) exited with '
        f'status 2' in err
    )
    assert f'error: injected fault: rank 1, step {step}' in err
    assert_checkpoint_loads(tmp_path, epochs_saved)


@pytest.mark.parametrize('victim', ['worker 1', 'server 0', 'scheduler'])
def test_process_killed(tmp_path, victim):
    """SIGKILL a worker, the server or the scheduler after the first
    epoch: the job ends, naming it and the signal."""
    job = Job(training(tmp_path) + ['--epochs', '100000'])
    job.wait_for('epoch 2:')
    os.kill(job.pids[victim], signal.SIGKILL)
    err = job.end(time.monotonic())
    assert job.proc.returncode == 128 + signal.SIGKILL
    assert (
        f'launch: {victim} (pid {job.pids[victim]}) was killed by '
        f'SIGKILL' in err
    )
    path = tmp_path / 'ckpt.npz'
    params, done = load_checkpoint(str(path))
    assert done >= 1 and len(params) == len(dp.LENET_SHAPES)


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
def test_launcher_stopped_by_a_signal(sig):
    """A plain user script's job: SIGTERM or SIGINT to the launcher stops
    every process it started and exits 128 + the signal."""
    job = Job([PY, '-c', FOREVER])
    job.wait_for('] ready', times=2)
    job.proc.send_signal(sig)
    err = job.end(time.monotonic())
    assert job.proc.returncode == 128 + sig
    assert f'received {signal.Signals(sig).name}' in err


def test_plain_script_raising_after_kvstore_ends_the_job(tmp_path):
    """A user's own script (not the project's worker) that raises after
    creating the kvstore, while its peer trains on: the job ends with
    the exception's status and message."""
    script = tmp_path / 'user.py'
    script.write_text(
        FOREVER.replace(
            'print("ready", flush=True)',
            'print("ready", flush=True)\n'
            'if kv.rank == 1:\n    raise KeyError("user bug")',
        )
    )
    job = Job([PY, str(script)])
    job.wait_for("KeyError: 'user bug'")
    err = job.end(time.monotonic())
    assert job.proc.returncode == 1
    assert "KeyError: 'user bug'" in err


def test_plain_script_exiting_with_a_status_ends_the_job():
    """A user's script calling sys.exit(3) after creating the kvstore:
    the launcher exits 3 within seconds, naming that worker."""
    job = Job(
        [
            PY,
            '-c',
            FOREVER.replace(
                'print("ready", flush=True)',
                'print("ready", flush=True)\n'
                'import sys\nif kv.rank == 1: sys.exit(3)',
            ),
        ]
    )
    job.wait_for('] ready', times=2)
    err = job.end(time.monotonic())
    assert job.proc.returncode == 3
    assert 'exited with status 3' in err


@pytest.mark.parametrize(
    'shell, status, message',
    [
        ('{py} {script} raise; echo the shell went on', 1, 'user bug'),
        ('{py} {script} exit', 3, 'SystemExit: 3'),
    ],
    ids=['raise-then-shell-exits-0', 'exit-3'],
)
def test_python_inside_a_shell_command_ends_the_job(
    tmp_path, shell, status, message
):
    """A worker command that is not `python ...`: a shell script that
    starts a user's script, which fails after creating the kvstore. The
    job ends with the Python process's status and error, even when the
    shell around it goes on and exits 0."""
    script = tmp_path / 'user.py'
    script.write_text(
        FOREVER.replace(
            'print("ready", flush=True)',
            'print("ready", flush=True)\n'
            'import sys\n'
            'if kv.rank == 1 and sys.argv[1] == "exit": sys.exit(3)\n'
            'if kv.rank == 1: raise KeyError("user bug")',
        )
    )
    run_sh = tmp_path / 'run.sh'
    run_sh.write_text(shell.format(py=PY, script=script) + '\n')
    job = Job(['bash', str(run_sh)])
    job.wait_for('] ready', times=2)
    err = job.end(time.monotonic())
    assert job.proc.returncode == status
    assert f'that exited with status {status}' in err
    assert message in err


def test_a_command_without_python_failing_ends_the_job():
    """A worker command that is no Python at all and exits 3."""
    job = Job(['sh', '-c', 'echo starting; exit 3'])
    job.wait_for('starting')
    err = job.end(time.monotonic())
    assert job.proc.returncode == 3
    assert 'exited with status 3' in err


def test_resume_from_a_corrupt_checkpoint_names_it(tmp_path):
    """--resume with a truncated checkpoint: the job ends at once with an
    error naming the file and saying what to do."""
    job = Job(training(tmp_path) + ['--epochs', '1'])
    job.proc.communicate(timeout=60)
    assert job.proc.returncode == 0
    path = tmp_path / 'ckpt.npz'
    path.write_bytes(path.read_bytes()[:300])
    job = Job(training(tmp_path) + ['--resume'])
    job.wait_for('launch: started worker 1')
    err = job.end(time.monotonic())
    assert f'{path} is not a readable d2lpar checkpoint' in err
    assert 'Delete it' in err
