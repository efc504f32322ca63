"""An emulated network: rate-limited loopback, or two hosts on a link.

This machine's loopback is memory, not a network: a megabyte costs
almost nothing, so every engine looks alike. Linux can emulate a slower
network without any hardware:

- one host: a private network namespace (``unshare --net``) whose
  loopback is limited by a token-bucket filter,
  ``tc qdisc add dev lo root tbf rate 100mbit burst 1mb latency 50ms``;
- two hosts: two namespaces joined by a virtual Ethernet pair (veth),
  each end with its own address, each direction limited the same way;
  each resolves the machine's name to its own address, and an ``ssh``
  stand-in lets ``horovodrun -H`` start workers on the other host.

Both need root (or user namespaces) and the ``ip`` and ``tc`` programs;
:func:`why_not` says what is missing where they cannot run.
"""

import collections
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile

SUBNET = '10.99.0'  # the emulated hosts are 10.99.0.1, 10.99.0.2, ...
DEVICE = 'veth0'  # each host's end of the link
_UNITS = {'kbit': 1e3, 'mbit': 1e6, 'gbit': 1e9}

# One emulated host: its address and the command prefix that runs a
# process on it (e.g. ``ip netns exec NAME``).
Host = collections.namedtuple('Host', 'address prefix')
LOCALHOST = Host('127.0.0.1', ())


def parse_rate(rate):
    """Bits per second of a tc rate such as ``'100mbit'`` or ``'1gbit'``.

    Raises
    ------
    ValueError
        For anything but a number followed by kbit, mbit or gbit.
    """
    match = re.fullmatch(r'([0-9.]+)(kbit|mbit|gbit)', str(rate).lower())
    if not match:
        raise ValueError(
            f'rate {rate!r} is not a tc rate; write e.g. '
            f'100mbit, 1gbit or 10gbit'
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


# The smallest bucket that passes one loopback packet (64 KiB) with its
# headers: a smaller one stalls every transfer.
MIN_BURST = 2**16 + 2**12


def tbf_burst(rate):
    """Bytes the token bucket of :func:`tbf_command` holds at ``rate``.

    One largest packet (:data:`MIN_BURST`), or 1 ms of traffic where
    that is more: a link idle long enough to refill it sends this many
    bytes at once, without waiting for the rate.
    """
    return max(MIN_BURST, int(parse_rate(rate) / 8 * 1e-3))


def tbf_command(device, rate):
    """The ``tc`` command that limits ``device``'s sending to ``rate``.

    A token bucket lets a burst of up to ``burst`` bytes leave at memory
    speed whenever the link was idle long enough to refill it. A bucket
    of a megabyte, as tc examples use, would let LeNet's whole 0.5 MB of
    gradients pass at once after every compute phase: the rate would cap
    only the average, and a step would never wait for the link. A real
    link makes every message wait its bytes over the rate, so the bucket
    holds one largest packet (:data:`MIN_BURST`), or 1 ms of traffic at
    rates where that is more (so the timer can keep up).
    """
    burst = tbf_burst(rate)
    return [
        'tc',
        'qdisc',
        'add',
        'dev',
        device,
        'root',
        'tbf',
        'rate',
        rate,
        'burst',
        str(burst),
        'latency',
        '50ms',
    ]


def why_not(hosts=1):
    """None if this machine can emulate the network; else the reason."""
    missing = [p for p in ('ip', 'tc', 'unshare') if not shutil.which(p)]
    if missing:
        return f'the programs {", ".join(missing)} are not installed'
    if hosts > 1 and os.geteuid() != 0:
        return 'two emulated hosts need root (ip netns add)'
    probe = [
        'unshare',
        '--net',
        'sh',
        '-c',
        'ip link set lo up && ' + ' '.join(tbf_command('lo', '1gbit')),
    ]
    if os.geteuid() != 0:
        probe.insert(1, '--map-root-user')
    run = subprocess.run(probe, capture_output=True, text=True)
    if run.returncode != 0:
        return (
            f'this machine refused a network namespace with a '
            f'rate-limited loopback: {run.stderr.strip()}'
        )
    return None


def _ip(*args):
    subprocess.run(['ip', *args], check=True, capture_output=True)


class EmulatedHosts:
    """``count`` hosts in network namespaces, joined by a limited link.

    Use as a context manager; on exit the namespaces are deleted. Two
    hosts share one veth pair; :attr:`hosts` lists their addresses and
    the prefixes that run a command on each.

    Parameters
    ----------
    rate : str, optional
        The link's rate in each direction (``'100mbit'``); None for an
        unlimited link.
    count : int, optional
        Hosts (only 2 is supported: one link).
    """

    def __init__(self, rate=None, count=2):
        if count != 2:
            raise ValueError(
                f'EmulatedHosts: count must be 2 (one veth link), got {count}'
            )
        self.rate = rate
        self.names = [f'd2lpar-{os.getpid()}-{i}' for i in range(count)]
        self.hosts = [
            Host(f'{SUBNET}.{i + 1}', ('ip', 'netns', 'exec', name))
            for i, name in enumerate(self.names)
        ]

    def __enter__(self):
        try:
            for name in self.names:
                _ip('netns', 'add', name)
            _ip(
                'link',
                'add',
                DEVICE,
                'netns',
                self.names[0],
                'type',
                'veth',
                'peer',
                'name',
                DEVICE,
                'netns',
                self.names[1],
            )
            for host, name in zip(self.hosts, self.names):
                _ip(
                    '-n',
                    name,
                    'addr',
                    'add',
                    f'{host.address}/24',
                    'dev',
                    DEVICE,
                )
                _ip('-n', name, 'link', 'set', DEVICE, 'up')
                _ip('-n', name, 'link', 'set', 'lo', 'up')
                if self.rate:
                    subprocess.run(
                        [
                            'ip',
                            'netns',
                            'exec',
                            name,
                            *tbf_command(DEVICE, self.rate),
                        ],
                        check=True,
                        capture_output=True,
                    )
        except subprocess.CalledProcessError as e:
            self.__exit__()
            raise RuntimeError(
                f'could not build the emulated hosts: '
                f'{" ".join(e.cmd)}: {e.stderr}'
            ) from e
        self.start = self.link_bytes()
        self.ssh_dir = _write_ssh(dict(zip(self.hosts, self.names)))
        for host, name in zip(self.hosts, self.names):
            _write_hosts(name, host.address)
        return self

    def ssh_env(self):
        """Variables under which ``ssh HOST CMD`` runs CMD on that host.

        ``horovodrun -H`` starts its remote workers with ``ssh``; here
        a stand-in, first on ``PATH``, runs the command in the host's
        namespace instead (:func:`_write_ssh`).
        """
        path = os.environ.get('PATH', os.defpath)
        return {'PATH': f'{self.ssh_dir}{os.pathsep}{path}'}

    def link_bytes(self):
        """Bytes sent so far over the link, both directions together."""
        total = 0
        for name in self.names:
            out = subprocess.run(
                ['ip', '-n', name, '-s', '-j', 'link', 'show', DEVICE],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            total += json.loads(out)[0]['stats64']['tx']['bytes']
        return total

    def sent(self):
        """Bytes sent over the link since the hosts were built."""
        return self.link_bytes() - self.start

    def __exit__(self, *exc):
        shutil.rmtree(getattr(self, 'ssh_dir', ''), ignore_errors=True)
        for name in self.names:
            shutil.rmtree(os.path.join(ETC_NETNS, name), ignore_errors=True)
        for name in self.names:
            subprocess.run(['ip', 'netns', 'del', name], capture_output=True)


# ssh's options that take a value, before or after the host.
_SSH = """#!/bin/sh
# ssh HOST COMMAND for d2lpar's emulated hosts: run COMMAND in HOST's
# network namespace, as sshd would run it in the host's shell.
skip() { case "$1" in -[oipFlJ]) echo 2;; -*) echo 1;; *) echo 0;; esac; }
while [ $# -gt 0 ] && [ "$(skip "$1")" != 0 ]; do shift "$(skip "$1")"; done
host=$1; shift
while [ $# -gt 0 ] && [ "$(skip "$1")" != 0 ]; do shift "$(skip "$1")"; done
case "$host" in
%s
  *) echo "ssh (d2lpar stand-in): no emulated host $host" >&2; exit 255;;
esac
exec ip netns exec "$ns" sh -c "$*"
"""


# ``ip netns exec NAME`` shows the files in ETC_NETNS/NAME as /etc's.
ETC_NETNS = '/etc/netns'


def _write_hosts(name, address):
    """Make this machine's name resolve to ``address`` on host ``name``.

    On a real host the machine's own name resolves to its address on
    the network; here every namespace would resolve it to 127.0.0.1,
    and Horovod's Gloo jobs then fail even with ``--network-interfaces``:
    rank 0 dials rank 1 at 127.0.0.1 (seen with Horovod 0.28.1).
    """
    folder = os.path.join(ETC_NETNS, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'hosts'), 'w') as f:
        f.write(f'127.0.0.1 localhost\n{address} {socket.gethostname()}\n')


def ssh_script(namespaces):
    """The ``ssh`` stand-in for ``{host: namespace name}``, as text."""
    cases = '\n'.join(
        f'  {host.address}) ns={name};;' for host, name in namespaces.items()
    )
    return _SSH % cases


def _write_ssh(namespaces):
    """A folder holding an ``ssh`` stand-in for ``{host: namespace}``."""
    folder = tempfile.mkdtemp(prefix='d2lpar-ssh-')
    path = os.path.join(folder, 'ssh')
    with open(path, 'w') as f:
        f.write(ssh_script(namespaces))
    os.chmod(path, 0o755)
    return folder
