"""Run a Python program so that a failure ends its process at once.

``python guard.py [-m MODULE | -c CODE | SCRIPT] ARGS...`` runs the
program as ``python`` itself would. When it ends with an exception or
``sys.exit(n)`` with ``n != 0``, the guard prints the error, flushes the
output and ends the process with ``os._exit``, skipping the interpreter's
shutdown. That shutdown is where a ps-lite worker hangs: the distributed
kvstore's destructor calls ps-lite's ``Finalize``, a barrier that waits
for every other worker to finalize too, and the other workers are still
training, waiting in their next push for the one that failed. A worker
that succeeds exits normally, through the barrier, as ps-lite expects.

The launcher (:func:`d2lpar.dist.launch.launch`) runs every Python
worker command through this file, by path, so it works for any script
whether or not :mod:`d2lpar` is importable there.
"""
import os
import runpy
import sys
import traceback


def _exit_now(status):
    """Flush what the program printed, then end without shutdown."""
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


def run(argv):
    """Run ``argv`` (what follows ``python``); return only on success."""
    if not argv:
        raise SystemExit('guard: usage: guard.py [-m MODULE | -c CODE | '
                         'SCRIPT] ARGS...')
    try:
        if argv[0] == '-m':
            sys.argv = argv[1:]  # run_module sets argv[0] to the file
            sys.path[0] = os.getcwd()  # what `python -m` puts first
            runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
        elif argv[0] == '-c':
            sys.argv = ['-c', *argv[2:]]
            sys.path[0] = ''
            code = compile(argv[1], '<string>', 'exec')
            exec(code, {'__name__': '__main__', '__builtins__':
                        __builtins__})
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name='__main__')
    except SystemExit as e:
        status = _status(e.code)
        if status != 0:
            _exit_now(status)
    except BaseException as e:  # an exception, KeyboardInterrupt too
        traceback.print_exception(type(e), e, _program_frames(e))
        _exit_now(1)


def _program_frames(error):
    """The traceback without the guard's and runpy's own frames."""
    tb = error.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename == __file__
                              or 'runpy' in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


if __name__ == '__main__':
    run(sys.argv[1:])
