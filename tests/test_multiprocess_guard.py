"""The guard: a failed Python program ends at once, even when the
interpreter's shutdown would block (as ps-lite's finalize barrier does).
"""

import json
import os
import subprocess
import sys
import time

import pytest

from d2lpar.multiprocess import guard
from d2lpar.multiprocess.launcher import guard_env, guarded, is_python

PY = sys.executable
# A non-daemon thread blocks interpreter shutdown forever, like ps-lite's
# barrier waiting for a worker that never comes.
BLOCK = (
    'import threading\n'
    'threading.Thread(target=threading.Event().wait).start()\n'
)


def run_guarded(args, tmp_path):
    start = time.monotonic()
    run = subprocess.run(
        [PY, guard.__file__, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    return run, time.monotonic() - start


@pytest.mark.parametrize(
    'tail, status, message',
    [
        ('raise KeyError("bug")', 1, "KeyError: 'bug'"),
        ('import sys; sys.exit(3)', 3, ''),
        ('import sys; sys.exit("bad input")', 1, 'bad input'),
    ],
)
def test_failure_ends_the_process_although_shutdown_blocks(
    tmp_path, tail, status, message
):
    """An exception or sys.exit(n != 0) ends the process with the status
    python itself would give, its message printed, in seconds although
    a thread would block the interpreter's shutdown forever."""
    script = tmp_path / 'user.py'
    script.write_text(BLOCK + tail + '\n')
    run, took = run_guarded([str(script)], tmp_path)
    assert run.returncode == status
    assert message in run.stderr
    assert took < 30
    if status == 1 and 'KeyError' in message:
        assert 'guard.py' not in run.stderr  # the program's frames only


def test_success_exits_normally_through_shutdown(tmp_path):
    """A program that succeeds runs atexit handlers (ps-lite's barrier
    must run when every worker succeeded)."""
    code = 'import atexit; atexit.register(print, "shutdown ran")'
    run, _ = run_guarded(['-c', code], tmp_path)
    assert run.returncode == 0 and run.stdout == 'shutdown ran\n'


def test_runs_scripts_modules_and_code_as_python_does(tmp_path):
    """sys.argv, sys.path[0] and __name__ are what `python` would give
    for a script, -m module and -c code."""
    show = (
        'import sys; print(__name__, sys.argv[1:], '
        'sys.path[0] == "" or sys.path[0])\n'
    )
    (tmp_path / 'prog.py').write_text(show)
    script, _ = run_guarded([str(tmp_path / 'prog.py'), 'a'], tmp_path)
    module, _ = run_guarded(['-m', 'prog', 'b'], tmp_path)
    code, _ = run_guarded(['-c', show, 'c'], tmp_path)
    assert script.stdout == f"__main__ ['a'] {tmp_path}\n"
    assert module.stdout == f"__main__ ['b'] {tmp_path}\n"
    assert code.stdout == "__main__ ['c'] True\n"


def test_launcher_guards_python_commands_only():
    """python SCRIPT, -m and -c run under the guard; other programs and
    interpreter options the guard does not know run unchanged."""
    assert guarded([PY, '-m', 'd2lpar', 'worker']) == [
        PY,
        os.path.abspath(guard.__file__),
        '-m',
        'd2lpar',
        'worker',
    ]
    assert guarded(['python3.11', 'train.py'])[1].endswith('guard.py')
    for command in (['bash', 'run.sh'], [PY, '-u', 'train.py'], [PY]):
        assert guarded(command) == command
    assert is_python('/usr/bin/python3') and not is_python('pythonista')


def run_in_job_env(command, tmp_path):
    """Run ``command`` with the variables the launcher gives a job."""
    env = dict(os.environ, **guard_env(str(tmp_path)))
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # as the launcher starts each process
    )
    out, _ = proc.communicate(timeout=60)
    reports = [json.loads(p.read_text()) for p in tmp_path.glob('*.json')]
    return proc, out, reports, time.monotonic() - start


@pytest.mark.parametrize(
    'tail, status, message',
    [
        ('raise KeyError("bug")', 1, "KeyError: 'bug'"),
        ('import sys; sys.exit(3)', 3, 'SystemExit: 3'),
        ('exit(4)', 4, 'SystemExit: 4'),
    ],
)
def test_python_inside_a_shell_ends_and_reports(
    tmp_path, tail, status, message
):
    """Python started by a shell (no guard.py on its command line) still
    ends in seconds although its shutdown blocks, and reports its pid,
    status and error to the launcher's folder, even when the shell
    around it exits 0."""
    script = tmp_path / 'user.py'
    script.write_text(BLOCK + tail + '\n')
    shell, out, reports, took = run_in_job_env(
        ['sh', '-c', f'{PY} {script}; echo shell went on'], tmp_path
    )
    assert took < 30
    assert shell.returncode == 0 and out == 'shell went on\n'
    assert len(reports) == 1 and reports[0]['status'] == status
    assert message in '\n'.join(reports[0]['error'])
    # The launcher finds the command by its process group.
    assert reports[0]['group'] == shell.pid != reports[0]['pid']


def test_python_inside_a_shell_succeeding_shuts_down_as_usual(tmp_path):
    """In a job's environment a program that succeeds runs its atexit
    handlers and writes no report."""
    code = 'import atexit; atexit.register(print, "shutdown ran")'
    shell, out, reports, _ = run_in_job_env(
        ['sh', '-c', f"{PY} -c '{code}'"], tmp_path
    )
    assert shell.returncode == 0 and out == 'shutdown ran\n'
    assert reports == []


def test_the_job_environment_keeps_the_users_pythonpath(tmp_path, monkeypatch):
    """guard_env puts the guard's folder first and keeps PYTHONPATH."""
    monkeypatch.setenv('PYTHONPATH', '/x')
    path = guard_env(str(tmp_path))['PYTHONPATH'].split(os.pathsep)
    assert path[0].endswith('guard_site') and path[1:] == ['/x']
