"""Run a command as N workers under PyTorch's own launcher.

``python -m d2lpar launch --engine torch --workers 2 -- python -m d2lpar
worker --engine torch`` runs the command as ``torchrun`` would: through
PyTorch's elastic agent (:func:`torch.distributed.launcher.api.
elastic_launch`, the agent ``torchrun`` itself runs), with a rendezvous
on 127.0.0.1, so that each worker finds ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` in its environment
and ``torch.distributed.init_process_group()`` just works (Gloo on
CPUs, NCCL on GPUs). The same job by hand::

    torchrun --standalone --nproc-per-node 2 --max-restarts 0 \\
        --no-python python -m d2lpar worker --engine torch

What this adds to ``torchrun``: a worker that fails ends the job at once
(the agent, told not to restart, stops the others with SIGTERM, then
SIGKILL) and the launcher says which worker failed, with what status,
and returns that status; SIGTERM or SIGINT to the launcher, or its time
limit, stops every worker's process group before it returns; SIGKILL to
the launcher (which no handler can catch) kills every worker too (see
:data:`ORPHAN_GUARD`); every line a worker prints comes out prefixed
with its rank.
"""

import os
import signal
import sys
import tempfile
import threading
import uuid

# The signals PyTorch's agent handles (TORCHELASTIC_SIGNALS_TO_HANDLE):
# each stops every worker's process group before the launcher returns.
# Those this system has: Windows has no SIGHUP or SIGQUIT (the agent
# skips them there too). Only Linux runs the tests; elsewhere untested.
HANDLED = tuple(
    getattr(signal, name)
    for name in ('SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT')
    if hasattr(signal, name)
)

# What the agent starts in place of each worker's command on Linux: it
# asks the kernel to SIGKILL it when the launcher dies, then becomes the
# command (exec keeps the pid and the death signal). Why: the agent
# (torch.distributed.elastic's SubprocessHandler._popen) starts every
# worker with subprocess.Popen(start_new_session=True), so that its
# SIGTERM reaches the worker's children (pytorch/pytorch#113231); it has
# no hook to run code in the child before exec, and nothing tells a
# worker that its agent is gone. SIGTERM to the launcher is handled (the
# agent stops every process group), but SIGKILL or a crash of the
# launcher left the workers running, reparented to init, blocked in
# their next collective for good. A watchdog thread polling the parent's
# pid would need every worker command to be Python and to start it;
# PR_SET_PDEATHSIG works for any command, at once, from the kernel.
# SIGKILL, not SIGTERM: with the launcher gone nothing would follow up
# on a worker that ignores SIGTERM. The kernel sends it when the
# *thread* that started the worker ends: the agent starts them from the
# thread that calls launch(), which must be the main thread (checked
# below), so the signal comes when the process ends. Not covered: a
# worker's own children (they stay in its session) and other systems
# than Linux (no PR_SET_PDEATHSIG; there the command runs as it is).
# argv: LAUNCHER_PID COMMAND ARGS...
ORPHAN_GUARD = """
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
    sys.exit('launch: prctl(PR_SET_PDEATHSIG) failed: '
             + os.strerror(ctypes.get_errno()))
if os.getppid() != int(sys.argv[1]):
    sys.exit('launch: the launcher ended before this worker started')
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as e:
    print(f'launch: cannot run {sys.argv[2]!r}: {e}', file=sys.stderr)
    os._exit(127)
"""


def guarded(command):
    """The command the agent starts for ``command``: under
    :data:`ORPHAN_GUARD` on Linux (it dies with this process), as it is
    elsewhere."""
    if not sys.platform.startswith('linux'):
        return list(command)
    return [sys.executable, '-c', ORPHAN_GUARD, str(os.getpid()), *command]


def _quiet_agent():
    # The agent logs its configuration and every state change at INFO
    # and WARNING; the job's own output, and ours, is what matters.
    import logging

    for name in ('torch.distributed.elastic', 'torch.distributed.launcher'):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _say(message):
    print(message, file=sys.stderr, flush=True)


def describe_failure(rank, failure):
    """``worker 1 (pid 123) exited with status 3`` or ``... was killed
    by SIGKILL``, and the error the worker recorded, if any."""
    code = failure.exitcode
    status = (
        f'was killed by {signal.Signals(-code).name}'
        if code < 0
        else f'exited with status {code}'
    )
    line = f'launch: worker {rank} (pid {failure.pid}) {status}'
    message = failure.message if isinstance(failure.message, str) else ''
    if message and not message.startswith('To enable traceback'):
        line += f': {message}'
    return line


def launch(command, workers=2, timeout=600):
    """Run ``command`` as ``workers`` processes of one PyTorch job.

    Taught in :doc:`/book/multiprocess`.

    Parameters
    ----------
    command : list of str
        The worker command, run as it is (as ``torchrun --no-python``
        does), e.g. ``['python', '-m', 'd2lpar', 'worker', '--engine',
        'torch']``.
    workers : int, optional
        Processes to start on this machine.
    timeout : float, optional
        Seconds before every worker is stopped (status 124).

    Returns
    -------
    int
        0 when every worker succeeded; otherwise the first failed
        worker's status (128 + the signal's number if a signal killed
        it), 124 on time-out, 128 + the signal's number when the launcher
        was stopped by SIGTERM or SIGINT.

    Raises
    ------
    ValueError
        For no command, fewer than one worker or a non-positive timeout.
    """
    if not command:
        raise ValueError(
            'launch: no worker command; put it after --, e.g. -- python '
            '-m d2lpar worker --engine torch'
        )
    if workers < 1:
        raise ValueError(f'launch: need at least 1 worker, got {workers}')
    if timeout <= 0:
        raise ValueError(f'launch: --timeout must be positive, got {timeout}')
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            'launch: call it from the main thread: signals (and the time '
            'limit) stop the workers, and only the main thread receives them'
        )
    from torch.distributed.elastic.multiprocessing import (
        DefaultLogsSpecs,
        SignalException,
        Std,
    )
    from torch.distributed.elastic.multiprocessing.errors import (
        ChildFailedError,
    )
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    _quiet_agent()
    # A worker's lines reach the console as it prints them (the agent
    # passes this process's environment on; restored afterwards).
    unbuffered = os.environ.get('PYTHONUNBUFFERED')
    os.environ['PYTHONUNBUFFERED'] = '1'
    expired = threading.Event()

    def stop_at_the_limit():
        expired.set()
        os.kill(os.getpid(), signal.SIGTERM)  # the agent's own way out

    timer = threading.Timer(timeout, stop_at_the_limit)
    timer.daemon = True
    # The agent turns these signals into exceptions and leaves its
    # handlers installed; put the caller's back afterwards (a notebook's
    # kernel, a test runner).
    handlers = {sig: signal.getsignal(sig) for sig in HANDLED}

    def stop(signum, frame):  # as the agent's own handler, until it has one
        raise SignalException(
            f'launch got {signal.Signals(signum).name}',
            sigval=signal.Signals(signum),
        )

    for sig in HANDLED:
        signal.signal(sig, stop)
    with tempfile.TemporaryDirectory(prefix='d2lpar-torch-') as logs:
        config = LaunchConfig(
            min_nodes=1,
            max_nodes=1,
            nproc_per_node=workers,
            run_id=str(uuid.uuid4()),
            rdzv_backend='c10d',
            rdzv_endpoint='127.0.0.1:0',
            max_restarts=0,
            monitor_interval=0.1,
            logs_specs=DefaultLogsSpecs(log_dir=logs, tee=Std.ALL),
            log_line_prefix_template='[worker ${rank}] ',
            shutdown_timeout=5,
        )
        timer.start()
        try:
            entry, *args = guarded(command)
            elastic_launch(config, entry)(*args)
            return 0
        except ChildFailedError as e:
            rank, failure = e.get_first_failure()
            _say(describe_failure(rank, failure) + '; stopped the others')
            code = failure.exitcode
            return code if code > 0 else 128 - code
        except SignalException as e:
            if expired.is_set():
                _say(
                    f'launch: time limit of {timeout:g} s reached; stopped '
                    f'every worker'
                )
                return 124
            _say(f'launch: received {e.sigval.name}; stopped every worker')
            return 128 + e.sigval
        finally:
            timer.cancel()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            if unbuffered is None:
                os.environ.pop('PYTHONUNBUFFERED', None)
            else:
                os.environ['PYTHONUNBUFFERED'] = unbuffered
