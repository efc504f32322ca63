"""Run a Python program so that a failure ends its process at once.

``python guard.py [-m MODULE | -c CODE | SCRIPT] ARGS...`` runs the
program as ``python`` itself would. When it ends with an exception or
``sys.exit(n)`` with ``n != 0``, the guard prints the error, flushes the
output and ends the process with ``os._exit``, skipping the interpreter's
shutdown. That shutdown is where a ps-lite worker hangs: the distributed
kvstore's destructor (MXNet 1.9's ``~KVStoreDist``) waits for all of
the engine's queued operations, then at a barrier of all workers, then
(rank 0) tells the servers to stop, then calls ps-lite's ``Finalize``,
a barrier of every process of the job; a failed worker hangs in the
first, since the other workers are still training, waiting in their
next push for the one that failed. A worker that succeeds exits
normally, through the barriers, as ps-lite expects.

The launcher (:func:`d2lpar.multiprocess.launch`) runs every Python
worker command through this file, by path, so it works for any script
whether or not :mod:`d2lpar` is importable there.

Worker commands that are not ``python ...`` (``sh -c '...'``, a shell
script that starts Python, ``env X=1 python ...``) cannot be wrapped
that way, so the launcher also puts ``guard_site/`` first on the job's
``PYTHONPATH``: its ``sitecustomize`` runs :func:`install_guard` in every
Python process the job starts, however deep. :func:`install_guard` records an
uncaught exception (``sys.excepthook``) or ``sys.exit(n)``/``exit(n)``
with ``n != 0``, and at the very start of the interpreter's shutdown,
before it waits for threads or runs ``atexit``, ends such a process with
``os._exit``. Either way the guard writes a report (pid, status, the
error's last lines) to the folder ``$D2LPAR_GUARD_REPORTS``, so the
launcher learns of the failure even when a shell around Python ignores
its status.
"""

import atexit
import builtins
import json
import os
import runpy
import sys
import threading
import traceback

# Where failure reports go; set by the launcher for the job's processes.
REPORTS = 'D2LPAR_GUARD_REPORTS'


def _exit_now(status, error=''):
    """Report, flush what the program printed, end without shutdown."""
    _write_report(status, error)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed stream must not hide the status
            pass
    os._exit(status)


def _status(code):
    """The exit status ``sys.exit(code)`` gives, as the interpreter does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)  # sys.exit('message') prints it
    return 1


def run_guarded(argv):
    """Run ``argv`` (what follows ``python``); return only on success."""
    if not argv:
        raise SystemExit(
            'guard: usage: guard.py [-m MODULE | -c CODE | SCRIPT] ARGS...'
        )
    try:
        if argv[0] == '-m':
            sys.argv = argv[1:]  # run_module sets argv[0] to the file
            sys.path[0] = os.getcwd()  # what `python -m` puts first
            runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
        elif argv[0] == '-c':
            sys.argv = ['-c', *argv[2:]]
            sys.path[0] = ''
            code = compile(argv[1], '<string>', 'exec')
            exec(code, {'__name__': '__main__', '__builtins__': __builtins__})
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name='__main__')
    except SystemExit as e:
        status = _status(e.code)
        if status != 0:
            _exit_now(status, f'SystemExit: {e.code}')
    except BaseException as e:  # an exception, KeyboardInterrupt too
        lines = traceback.format_exception(type(e), e, _program_frames(e))
        print(''.join(lines), end='', file=sys.stderr)
        _exit_now(1, ''.join(lines))


def _program_frames(error):
    """The traceback without the guard's and runpy's own frames."""
    tb = error.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename == __file__
        or 'runpy' in tb.tb_frame.f_code.co_filename
    ):
        tb = tb.tb_next
    return tb


def _write_report(status, error):
    folder = os.environ.get(REPORTS)
    if not folder:
        return
    report = {
        'pid': os.getpid(),
        'group': os.getpgid(0),
        'status': status,
        'argv': sys.orig_argv,
        'error': error.splitlines()[-15:],
    }
    try:  # write, then rename: the launcher never reads half a report
        path = os.path.join(folder, f'{os.getpid()}.json')
        with open(path + '.tmp', 'w') as f:
            json.dump(report, f)
        os.replace(path + '.tmp', path)
    except OSError:  # the launcher is gone: nobody to tell
        pass


# What install_guard() has seen: the status a failure would exit with.
_failed = {}


def install_guard():
    """Make a failed exit of this process immediate, in any program.

    After an uncaught exception, or ``sys.exit(n)``/``exit(n)`` with
    ``n != 0``, the process ends with that status as soon as the
    interpreter starts to shut down, before threads are joined,
    ``atexit`` runs or the kvstore is freed (its destructor's barrier
    would wait forever). A
    successful exit shuts down as usual. ``raise SystemExit(n)`` itself
    cannot be seen this way (only :func:`run_guarded` catches it).
    """
    hook = sys.excepthook

    def excepthook(kind, error, tb):
        hook(kind, error, tb)  # print the traceback as python does
        lines = traceback.format_exception(kind, error, tb)
        _failed.update(status=1, error=''.join(lines))

    def exiting(exit_):
        def exit(code=None):
            # As the interpreter will: None is 0, a message is 1.
            status = (
                0
                if code is None
                else code & 0xFF
                if isinstance(code, int)
                else 1
            )
            _failed.update(status=status, error=f'SystemExit: {code}')
            exit_(code)

        return exit

    sys.excepthook = excepthook
    sys.exit = exiting(sys.exit)
    for name in ('exit', 'quit'):  # site's exit(n) raises SystemExit
        if hasattr(builtins, name):
            setattr(builtins, name, exiting(getattr(builtins, name)))
    try:  # the earliest hook at shutdown: before threads are joined
        threading._register_atexit(_end_if_failed)
    except (AttributeError, RuntimeError):
        atexit.register(_end_if_failed)


def _end_if_failed():
    if _failed.get('status'):
        _exit_now(_failed['status'], _failed['error'])


if __name__ == '__main__':
    run_guarded(sys.argv[1:])
