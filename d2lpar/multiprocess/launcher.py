"""Start a ps-lite job on this machine: scheduler, servers and workers.

``python -m d2lpar launch --workers 2 --servers 1 -- python -m d2lpar
worker`` runs every role as its own process on 127.0.0.1, prefixes
their output with role and launch index, and never leaves a process
behind: when any process fails, when the time limit passes, or when the
launcher itself gets SIGTERM or SIGINT, every process group it started is
stopped. (MXNet's own ``tools/launch.py`` crashes on Python 3.9+, and
ps-lite hangs rather than fails when a peer is missing or has failed, so
the launcher has to watch.)
"""

import collections
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import guard
from .netem import LOCALHOST

# Lines of each process's output kept for the failure message.
TAIL_LINES = 15


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


def guarded(command):
    """``command`` with a Python program run through :mod:`guard`.

    A Python worker that raises after creating a distributed kvstore
    would hang in ps-lite's shutdown barrier; under the guard it exits at
    once with its status. Commands that are not ``python [-m M | -c C |
    SCRIPT] ...`` are returned unchanged.
    """
    if (
        len(command) > 1
        and is_python(command[0])
        and (command[1] in ('-m', '-c') or not command[1].startswith('-'))
    ):
        return [command[0], os.path.abspath(guard.__file__), *command[1:]]
    return list(command)


def guard_env(reports):
    """Variables that install the guard in every Python process of a job.

    ``guard_site/`` goes first on ``PYTHONPATH`` (its ``sitecustomize``
    runs :func:`d2lpar.multiprocess.install_guard`), and failure reports go to
    the folder ``reports``. This covers worker commands that are not
    ``python ...``, and Python started by a shell inside one.
    """
    site = os.path.join(
        os.path.dirname(os.path.abspath(guard.__file__)), 'guard_site'
    )
    path = [site, *filter(None, [os.environ.get('PYTHONPATH')])]
    return {'PYTHONPATH': os.pathsep.join(path), guard.REPORTS: reports}


def is_python(program):
    """Whether ``program`` names a Python interpreter (python, python3.11)."""
    return (
        re.fullmatch(r'python[0-9.]*', os.path.basename(program)) is not None
    )


def _die_with_parent():
    # In the child, before exec: if the launcher is killed outright
    # (SIGKILL, no chance to clean up), the kernel sends SIGTERM here.
    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: best effort only
        pass


def _relay(proc, name):
    for line in proc.stdout:
        proc.tail.append(line.rstrip('\n'))
        print(f'[{name}] {line}', end='', flush=True)


def _start(name, command, env):
    try:
        proc = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    except OSError as e:  # e.g. the program does not exist
        raise LaunchError(name, f'could not start {command[0]!r}: {e}') from e
    print(f'launch: started {name} as pid {proc.pid}', flush=True)
    proc.tail = collections.deque(maxlen=TAIL_LINES)
    proc.relay = threading.Thread(
        target=_relay, args=(proc, name), daemon=True
    )
    proc.relay.start()
    return proc


def _signal_group(pid, sig):
    try:
        os.killpg(pid, sig)  # the process and every child it started
    except ProcessLookupError:  # the whole group is gone already
        pass


def stop_all(procs, grace=5.0):
    """Stop every process group in ``procs``: SIGTERM, then SIGKILL."""
    for p in procs:
        _signal_group(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:  # children that ignored SIGTERM, or outlived p
        _signal_group(p.pid, signal.SIGKILL)
        p.wait()
    for p in procs:  # print every line the processes wrote
        p.relay.join(timeout=grace)


class LaunchError(RuntimeError):
    """A process of the job could not be started."""

    def __init__(self, name, message):
        super().__init__(f'launch: {name}: {message}')


class Stopped(Exception):
    """The launcher received SIGTERM or SIGINT."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def check_launch_args(command, workers, servers, port):
    """Raise ``ValueError`` for a job that could not run."""
    if not command:
        raise ValueError(
            'launch: no worker command; put it after --, '
            'e.g. -- python -m d2lpar worker'
        )
    if workers < 1 or servers < 1:
        raise ValueError(
            f'launch: need at least 1 worker and 1 server, '
            f'got {workers} and {servers}'
        )
    if port is not None and not port_is_free(port):
        raise ValueError(
            f'launch: port {port} on 127.0.0.1 is in use; '
            f'pick another or omit --port to get a free one'
        )


# The program every scheduler and server runs: importing MXNet with
# DMLC_ROLE set to scheduler or server runs that role until the job ends.
ROLE_PROGRAM = ('python', '-c', 'import mxnet')


def job_plan(
    command,
    workers=2,
    servers=1,
    kvstore='dist_sync',
    port=9091,
    hosts=(LOCALHOST,),
):
    """Every process of a ps-lite job: ``(name, host, env, argv)``.

    The scheduler runs on the first host; servers and workers are dealt
    to the hosts in turn. Each process gets the ``DMLC_*`` variables
    that ps-lite reads: where the scheduler is, how many servers and
    workers to wait for, its role and its own address.
    """
    root = hosts[0].address
    common = {
        'DMLC_PS_ROOT_URI': root,
        'DMLC_PS_ROOT_PORT': str(port),
        'DMLC_NUM_SERVER': str(servers),
        'DMLC_NUM_WORKER': str(workers),
        'D2LPAR_KVSTORE': kvstore,
    }
    roles = [('scheduler', hosts[0], 'scheduler', ROLE_PROGRAM)]
    roles += [
        (f'server {i}', hosts[i % len(hosts)], 'server', ROLE_PROGRAM)
        for i in range(servers)
    ]
    roles += [
        (f'worker {i}', hosts[i % len(hosts)], 'worker', tuple(command))
        for i in range(workers)
    ]
    return [
        (
            name,
            host,
            dict(common, DMLC_ROLE=role, DMLC_NODE_HOST=host.address),
            argv,
        )
        for name, host, role, argv in roles
    ]


def format_plan(plan):
    """The shell commands of :func:`job_plan`, one line per process."""
    lines = []
    for name, host, env, argv in plan:
        variables = ' '.join(f'{k}={v}' for k, v in env.items())
        program = ' '.join(a if ' ' not in a else f'"{a}"' for a in argv)
        lines.append(f'# {name}, on {host.address}\n{variables} {program}')
    return '\n'.join(lines)


def launch(
    command,
    workers=2,
    servers=1,
    kvstore='dist_sync',
    timeout=600,
    port=None,
    hosts=None,
):
    """Start a ps-lite job that runs ``command`` in every worker process.

    Taught in :doc:`/book/multiprocess`.

    Parameters
    ----------
    command : list of str
        The worker command; it reads ``D2LPAR_KVSTORE`` for the kvstore.
        A Python command runs under :mod:`d2lpar.multiprocess.guard`.
    workers : int, optional
        Worker processes, each running ``command``.
    servers : int, optional
        Parameter server processes.
    kvstore : str, optional
        A mode of :data:`~d2lpar.workers.KVSTORES`.
    timeout : float, optional
        Seconds before everything is stopped (status 124).
    port : int, optional
        The scheduler's port (default: a free one).
    hosts : list of d2lpar.multiprocess.Host, optional
        Where the processes run (default: this machine's 127.0.0.1); see
        :func:`job_plan` and :class:`d2lpar.multiprocess.EmulatedHosts`.

    Returns
    -------
    int
        0 when every worker succeeded; otherwise the first failure's
        status (the message names the process and shows its last
        lines), 124 on time-out, 128 + the signal's number when the
        launcher was stopped by SIGTERM or SIGINT.

    Raises
    ------
    ValueError
        For no command, fewer than one worker or server, or a busy port.
    """
    local = hosts is None
    check_launch_args(command, workers, servers, port if local else None)
    plan = job_plan(
        guarded(command),
        workers,
        servers,
        kvstore,
        port or (free_port() if local else 9091),
        hosts or [LOCALHOST],
    )
    procs = {}
    with _stop_on_signals(), tempfile.TemporaryDirectory() as reports:
        try:
            for name, host, env, argv in plan:
                if argv == ROLE_PROGRAM:
                    argv = (sys.executable, *argv[1:])
                # Unbuffered: a killed worker's last lines reach us too.
                env = dict(
                    os.environ,
                    **env,
                    **guard_env(reports),
                    PYTHONUNBUFFERED='1',
                )
                procs[name] = _start(name, [*host.prefix, *argv], env)
            return _watch(procs, timeout, reports)
        except LaunchError as e:
            _say(str(e))
            return 127
        except Stopped as e:
            _say(f'launch: received {e}; stopping every process')
            return 128 + e.signum
        finally:
            stop_all(list(procs.values()))


class _stop_on_signals:
    """Within the block, SIGTERM and SIGINT raise :class:`Stopped`."""

    def __enter__(self):
        self.old = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self.old[sig] = signal.signal(sig, self._raise)
            except ValueError:  # not the main thread: leave them be
                pass

    @staticmethod
    def _raise(signum, frame):
        raise Stopped(signum)

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)


def _say(message):
    print(message, file=sys.stderr, flush=True)


def describe_status(status):
    """``exited with status 3`` or ``killed by SIGKILL (status -9)``."""
    if status < 0:
        return (
            f'was killed by {signal.Signals(-status).name} (status {status})'
        )
    return f'exited with status {status}'


def _report(name, p, python=None):
    p.relay.join(timeout=2)  # its last lines, if it wrote any
    lines = list(p.tail)
    status = describe_status(p.returncode)
    if python is not None:  # a Python process inside it failed
        status = (
            f'ran a Python process (pid {python["pid"]}) that '
            f'{describe_status(python["status"])}; the command '
            f'itself {status}'
        )
        lines += [line for line in python['error'] if line not in lines]
    lines = '\n'.join(f'  | {line}' for line in lines) or '  (no output)'
    _say(
        f'launch: {name} (pid {p.pid}) {status}; stopping the others. '
        f'Its last lines:\n{lines}'
    )


def _python_failures(reports):
    """The guard's reports in ``reports``, by the process group."""
    failures = {}
    for entry in os.listdir(reports):
        if entry.endswith('.json'):
            with open(os.path.join(reports, entry)) as f:
                report = json.load(f)
            failures.setdefault(report['group'], report)
    return failures


def _watch(procs, timeout, reports):
    deadline = time.monotonic() + timeout
    worker_names = [n for n in procs if n.startswith('worker')]
    while True:
        failed = _python_failures(reports)
        for name, p in procs.items():
            status = p.poll()
            # A command that ended after a Python process in it failed
            # failed too, even if a shell around Python exited 0.
            python = failed.get(p.pid) if status is not None else None
            if python is not None and python['pid'] != p.pid:
                _report(name, p, python)
                return python['status']
            if status not in (None, 0):
                _report(name, p)
                return status if status > 0 else 128 - status
        if all(procs[n].poll() == 0 for n in worker_names):
            return 0
        if time.monotonic() > deadline:
            _say(
                f'launch: time limit of {timeout:.0f} s reached; '
                f'stopping every process'
            )
            return 124
        time.sleep(0.1)
