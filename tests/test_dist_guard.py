"""The guard: a failed Python program ends at once, even when the
interpreter's shutdown would block (as ps-lite's finalize barrier does).
"""

import os
import subprocess
import sys
import time

import pytest

from d2lpar.dist import guard
from d2lpar.dist.launch import guarded, is_python

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
