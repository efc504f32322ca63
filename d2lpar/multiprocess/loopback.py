"""Count the bytes a multi-process job sends over loopback.

The machine's own loopback interface also carries every other program's
traffic (a Jupyter kernel talks to its notebook over TCP). So the job runs
in a network namespace of its own (``unshare --net``), whose loopback
carries nothing but the job, and the interface's byte counter before and
after is exactly what the job sent, TCP/IP headers included.

``python -m d2lpar.multiprocess.loopback REPORT [RATE] -- COMMAND ...`` is the part
that runs inside the namespace; with a RATE such as ``100mbit`` it first
limits the namespace's loopback (:mod:`d2lpar.multiprocess.netem`).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .launcher import Stopped, _signal_group, _stop_on_signals
from .netem import parse_rate, tbf_command, why_not


def loopback_tx_bytes():
    """Bytes sent so far on this network namespace's ``lo`` interface."""
    with open('/proc/net/dev') as f:
        for line in f:
            name, _, counters = line.partition(':')
            if name.strip() == 'lo':
                return int(counters.split()[8])  # the first transmit field
    raise RuntimeError('no loopback interface in /proc/net/dev')


def namespace_prefix():
    """The command prefix that gives a job its own loopback, or None.

    Root uses ``unshare --net``; other users also map themselves to root
    in a new user namespace. Returns None where neither works (no
    ``unshare``, or the system forbids new namespaces).
    """
    if shutil.which('unshare') is None or shutil.which('ip') is None:
        return None
    prefix = ['unshare', '--net']
    if os.geteuid() != 0:
        prefix.insert(1, '--map-root-user')
    probe = subprocess.run(prefix + ['true'], capture_output=True)
    return prefix if probe.returncode == 0 else None


def run_counting_bytes(command, timeout, rate=None):
    """Run ``command`` with a private loopback; return ``(status, bytes)``.

    Parameters
    ----------
    command : list of str
        The job (for instance ``python -m d2lpar launch ...``); its output
        goes to this process's output.
    timeout : float
        Seconds before the whole job is killed (status 124).
    rate : str, optional
        Limit the private loopback to this rate (``'100mbit'``).

    Returns
    -------
    status : int
        The job's exit status.
    sent : int or None
        Bytes the job sent over loopback; None where this machine cannot
        give a job its own namespace (see :func:`namespace_prefix`): the
        job then runs as it is, uncounted.

    Raises
    ------
    RuntimeError
        If ``rate`` is given but this machine cannot limit a private
        loopback (the message says why).
    """
    prefix = namespace_prefix()
    if rate is not None:
        parse_rate(rate)  # a typo fails here, not inside the namespace
        reason = why_not(hosts=1)
        if reason:
            raise RuntimeError(f'cannot emulate a {rate} network: {reason}')
    if prefix is None:
        return _run(command, timeout), None
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, 'bytes.json')
        inner = [
            sys.executable,
            '-c',
            _INNER,
            report,
            *([rate] if rate else []),
            '--',
        ]
        status = _run(prefix + inner + list(command), timeout)
        if not os.path.exists(report):
            return status, None
        with open(report) as f:
            return status, json.load(f)['sent']


# Runs main() in the namespace (python -m would import this module twice).
_INNER = 'import sys; from d2lpar.multiprocess.loopback import main; sys.exit(main())'


def run_with_env(command, timeout, env=None):
    """Run ``command`` with ``env`` added to this process's variables.

    Like the job of :func:`run_counting_bytes`: its own session, stopped
    whole on time-out (status 124), SIGTERM or SIGINT.
    """
    return _run(command, timeout, dict(os.environ, **(env or {})))


def _run(command, timeout, env=None):
    """Run ``command`` in a session of its own; return its status.

    On time-out (status 124), and when this process gets SIGTERM or
    SIGINT, the whole session is stopped: SIGTERM first, so that
    ``horovodrun`` can stop the workers it started in sessions of their
    own, then SIGKILL. A signal is then delivered again to this process,
    as if it had come now (SIGINT raises KeyboardInterrupt).
    """
    proc = subprocess.Popen(command, start_new_session=True, env=env)
    try:
        with _stop_on_signals():
            return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return 124
    except Stopped as e:
        _stop(proc)
        os.kill(os.getpid(), e.signum)  # the handler is restored now
        raise  # a handler that ignores the signal: stop here anyway


def _stop(proc, grace=15.0):
    """SIGTERM ``proc``'s session, wait for it to end, then SIGKILL."""
    _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap it: a zombie would keep its group alive
        try:
            os.killpg(proc.pid, 0)  # anyone left in the group?
        except ProcessLookupError:
            break
        time.sleep(0.1)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def main(argv=None):
    """Inside the namespace: bring ``lo`` up, run the job, write bytes."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index('--')  # REPORT [RATE] -- COMMAND...
    report, rate, command = argv[0], argv[1:split], argv[split + 1 :]
    subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)
    if rate:
        subprocess.run(tbf_command('lo', rate[0]), check=True)
    before = loopback_tx_bytes()
    status = subprocess.run(command).returncode
    with open(report, 'w') as f:
        json.dump({'sent': loopback_tx_bytes() - before}, f)
    return status


if __name__ == '__main__':
    sys.exit(main())
