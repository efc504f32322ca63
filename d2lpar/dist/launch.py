"""Start a ps-lite job on this machine: scheduler, servers and workers.

``python -m d2lpar launch --workers 2 --servers 1 -- python -m d2lpar
worker`` runs every role as its own process on 127.0.0.1, prefixes
their output with role and rank, and never leaves a process behind: when
one worker fails or the time limit passes, all are stopped. (MXNet's own
``tools/launch.py`` crashes on Python 3.9+, and ps-lite hangs rather than
fails when a peer is missing, so the time limit is not optional.)
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def port_is_free(port):
    """Whether ``port`` on 127.0.0.1 can be bound right now."""
    with socket.socket() as s:
        try:
            s.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def free_port():
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _relay(proc, name):
    for line in proc.stdout:
        print(f'[{name}] {line}', end='', flush=True)


def _start(name, command, env):
    try:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    except OSError as e:  # e.g. the program does not exist
        raise LaunchError(name, f'could not start {command[0]!r}: {e}')
    print(f'launch: started {name} as pid {proc.pid}', flush=True)
    proc.relay = threading.Thread(target=_relay, args=(proc, name),
                                  daemon=True)
    proc.relay.start()
    return proc


def _stop(procs, grace=5):
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.time() + grace
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    for p in procs:  # print every line the processes wrote
        p.relay.join(timeout=grace)


class LaunchError(RuntimeError):
    """A process of the job could not be started."""

    def __init__(self, name, message):
        super().__init__(f'launch: {name}: {message}')


def check_launch_args(command, workers, servers, port):
    """Raise ``ValueError`` for a job that could not run."""
    if not command:
        raise ValueError('launch: no worker command; put it after --, '
                         'e.g. -- python -m d2lpar worker')
    if workers < 1 or servers < 1:
        raise ValueError(f'launch: need at least 1 worker and 1 server, '
                         f'got {workers} and {servers}')
    if port is not None and not port_is_free(port):
        raise ValueError(f'launch: port {port} on 127.0.0.1 is in use; '
                         f'pick another or omit --port to get a free one')


def launch(command, workers=2, servers=1, kvstore='dist_sync',
           timeout=600, port=None):
    """Run ``command`` as ``workers`` ps-lite workers; return exit status.

    Taught in the chapter on multi-process training.

    Parameters
    ----------
    command : list of str
        The worker command; it reads ``D2LPAR_KVSTORE`` for the kvstore.
    workers, servers : int, optional
    kvstore : {'dist_sync', 'dist_device_sync'}, optional
    timeout : float, optional
        Seconds before everything is stopped (status 124).
    port : int, optional
        The scheduler's port (default: a free one).

    Returns
    -------
    int
        0 when every worker succeeded; otherwise the first failure's
        status (the message names the process).

    Raises
    ------
    ValueError
        For no command, fewer than one worker or server, or a busy port.
    """
    check_launch_args(command, workers, servers, port)
    env = dict(os.environ, DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT=str(port or free_port()),
               DMLC_NUM_SERVER=str(servers), DMLC_NUM_WORKER=str(workers),
               DMLC_NODE_HOST='127.0.0.1', D2LPAR_KVSTORE=kvstore)
    role = lambda r: dict(env, DMLC_ROLE=r)  # noqa: E731
    helper = [sys.executable, '-c', 'import mxnet']  # runs the role
    procs = {}
    try:
        procs['scheduler'] = _start('scheduler', helper, role('scheduler'))
        for i in range(servers):
            procs[f'server {i}'] = _start(f'server {i}', helper,
                                          role('server'))
        for i in range(workers):
            procs[f'worker {i}'] = _start(f'worker {i}', command,
                                          role('worker'))
    except LaunchError as e:
        print(e, file=sys.stderr, flush=True)
        _stop(list(procs.values()))
        return 127
    return _watch(procs, timeout)


def _watch(procs, timeout):
    start = time.time()
    worker_names = [n for n in procs if n.startswith('worker')]
    try:
        while True:
            for name, p in procs.items():
                if p.poll() not in (None, 0):
                    print(f'launch: {name} (pid {p.pid}) exited with '
                          f'status {p.returncode}; stopping the others',
                          file=sys.stderr, flush=True)
                    return p.returncode
            if all(procs[n].poll() == 0 for n in worker_names):
                return 0
            if time.time() - start > timeout:
                print(f'launch: time limit of {timeout:.0f} s reached; '
                      f'stopping every process', file=sys.stderr,
                      flush=True)
                return 124
            time.sleep(0.1)
    finally:
        _stop(list(procs.values()))
