"""launch --engine torch: PyTorch's elastic agent runs the workers; a
failed worker ends the job in seconds, a signal or the time limit leaves
no process behind. Every launch has a time limit, and every wait one
too: a hang fails the test instead of blocking CI."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip('torch')

from d2lpar import cli  # noqa: E402
from d2lpar.torch.launch import launch  # noqa: E402

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'torchjob.py')
PY = sys.executable


def gone(pid):
    """Whether process ``pid`` no longer runs (gone, or a zombie)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().split(')')[-1].split()[0] == 'Z'
    except FileNotFoundError:
        return True


def pids(folder, workers=2):
    return [
        int(open(os.path.join(folder, f'pid-{r}')).read())
        for r in range(workers)
    ]


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f'waited {seconds} s for {what}')
        time.sleep(0.1)


@pytest.mark.slow
def test_two_workers_find_each_other_with_gloo(tmp_path, capfd):
    """init_process_group() needs no argument: the agent set RANK,
    WORLD_SIZE and the rendezvous; each output line names its worker."""
    assert launch([PY, JOB, str(tmp_path), 'ok'], workers=2, timeout=120) == 0
    out = capfd.readouterr().out
    assert '[worker 0] rank 0 of 2: sum 3' in out
    assert '[worker 1] rank 1 of 2: sum 3' in out


def test_a_raising_worker_ends_the_job_in_seconds(tmp_path, capfd):
    """Both workers meet (Gloo sums their ranks), then rank 1 raises while
    rank 0 waits for it in a barrier: the launcher stops rank 0 and
    returns rank 1's status within seconds, naming it; the signal
    handlers it borrowed are back. Rank 1's status is its exception's 1,
    or SIGABRT's 134: PyTorch's shutdown with Gloo's threads still running
    aborted the raising worker in 1 of 3 runs here ("terminate called
    without an active exception"), and the launcher reports the status
    the worker really ended with."""
    before = signal.getsignal(signal.SIGTERM)
    status = launch([PY, JOB, str(tmp_path), 'raise'], workers=2, timeout=120)
    returned = time.time()
    raised = float((tmp_path / 'raised').read_text())
    ended = {1: 'exited with status 1', 128 + signal.SIGABRT: 'by SIGABRT'}
    assert status in ended, status
    assert returned - raised < 10, f'{returned - raised:.1f} s after raising'
    assert all(gone(pid) for pid in pids(tmp_path))
    out, err = capfd.readouterr()
    assert '[worker 0] rank 0 of 2: sum 3' in out
    assert 'worker 1 breaks on purpose' in err
    assert 'launch: worker 1 (pid' in err and ended[status] in err
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.slow
def test_the_time_limit_stops_every_worker(tmp_path, capfd):
    """Workers that ignore SIGTERM are killed too (SIGKILL after the
    agent's grace period); status 124."""
    start = time.monotonic()
    status = launch(
        [PY, JOB, str(tmp_path), 'ignore-term'], workers=2, timeout=25
    )
    assert status == 124
    assert time.monotonic() - start < 25 + 20
    assert all(gone(pid) for pid in pids(tmp_path))
    assert 'time limit of 25 s reached' in capfd.readouterr().err


@pytest.mark.parametrize(
    'sig',
    [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)],
)
def test_a_signal_to_the_launcher_leaves_nothing_running(tmp_path, sig):
    launcher, workers = _start_launcher(tmp_path, 'sleep')
    try:
        launcher.send_signal(sig)
        out, err = launcher.communicate(timeout=30)
    finally:
        launcher.kill()
    assert launcher.returncode == 128 + sig, err[-2000:]
    assert f'received {signal.Signals(sig).name}' in err
    wait_for(lambda: all(gone(p) for p in workers), 5, 'the workers to end')


def _start_launcher(tmp_path, mode):
    """``launch --engine torch`` in a process of its own, once both of its
    workers run ``torchjob.py`` in ``mode``; (launcher, worker pids)."""
    launcher = subprocess.Popen(
        [PY, '-m', 'd2lpar', 'launch', '--engine', 'torch', '--workers',
         '2', '--timeout', '200', '--', PY, JOB, str(tmp_path), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip

    def started():
        if launcher.poll() is not None:
            out, err = launcher.communicate()
            pytest.fail(f'the launcher ended early: {out}\n{err}')
        return all((tmp_path / f'pid-{r}').exists() for r in (0, 1))

    try:
        wait_for(started, 150, 'both workers to start')
    except BaseException:
        launcher.kill()
        raise
    return launcher, pids(tmp_path)


@pytest.mark.slow
def test_sigkill_to_the_launcher_leaves_no_worker(tmp_path):
    """SIGKILL cannot be handled, so the agent cannot stop anything: the
    kernel kills each worker when the launcher dies (PR_SET_PDEATHSIG),
    even workers that ignore SIGTERM."""
    launcher, workers = _start_launcher(tmp_path, 'ignore-term')
    try:
        assert not any(gone(p) for p in workers)
        launcher.kill()  # SIGKILL
        launcher.communicate(timeout=30)
        wait_for(
            lambda: all(gone(p) for p in workers), 5, 'the workers to end'
        )
    finally:
        for pid in workers:  # never leave one behind if the test fails
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    assert launcher.returncode == -signal.SIGKILL


def test_bad_launches_are_clear_errors(capsys):
    cases = [
        (['--workers', '2', '--'], 'no worker command'),
        (['--workers', '0', '--', PY, JOB], 'need at least 1 worker'),
        (['--servers', '2', '--', PY, JOB], '--servers belong to the'),
        (['--timeout', '0', '--', PY, JOB], '--timeout must be positive'),
    ]
    for args, message in cases:
        assert cli.main(['launch', '--engine', 'torch', *args]) == 2
        assert message in capsys.readouterr().err


def test_a_worker_outside_a_launcher_says_how_to_start_it(capsys, monkeypatch):
    monkeypatch.delenv('RANK', raising=False)
    assert cli.main(['worker', '--engine', 'torch']) == 2
    assert 'launch --engine torch' in capsys.readouterr().err


def test_without_pytorch_the_command_line_still_works():
    """Where PyTorch is not installed (make test-numpy126's venv) every
    command still parses, and the torch engine says how to install it."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        'from d2lpar import cli\n'
        "status = cli.main(['worker', '--engine', 'torch'])\n"
        "print('status', status)\n"
    )
    out = subprocess.run(
        [PY, '-c', code], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ['status', '2'], out.stderr
    assert 'pip install "d2lpar[torch]"' in out.stderr


def test_a_system_without_sighup_or_sigquit_imports_the_launcher():
    """Windows' signal module has neither SIGHUP nor SIGQUIT: with them
    removed, the launcher still imports and handles the two signals left
    (only simulated: the tests run on Linux)."""
    code = (
        'import signal\n'
        'del signal.SIGHUP, signal.SIGQUIT\n'
        'from d2lpar.torch import launch\n'
        'print(*(s.name for s in launch.HANDLED))\n'
    )
    out = subprocess.run(
        [PY, '-c', code], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ['SIGTERM', 'SIGINT'], out.stderr
    # And where they exist, all four are handled.
    from d2lpar.torch.launch import HANDLED

    assert [s.name for s in HANDLED] == [
        'SIGTERM',
        'SIGINT',
        'SIGHUP',
        'SIGQUIT',
    ]


def test_a_time_limit_during_start_up_leaves_nothing(tmp_path):
    """The limit fires before the agent has started (or while it starts)
    the workers: status 124 at once, and no worker of the job runs."""
    start = time.monotonic()
    assert (
        launch([PY, JOB, str(tmp_path), 'sleep'], workers=2, timeout=1) == 124
    )
    assert time.monotonic() - start < 15

    def running():
        found = []
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open(f'/proc/{pid}/cmdline', 'rb') as f:
                    if str(tmp_path).encode() in f.read() and not gone(pid):
                        found.append(pid)
            except OSError:  # ended while we looked
                pass
        return found

    time.sleep(2)  # a worker starting now would show up
    assert running() == []
