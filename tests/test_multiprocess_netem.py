"""d2lpar.multiprocess.netem: rates, the token bucket, hosts joined by a
rate-limited link, and the job plan that places processes on them."""

import os
import sys

import pytest
from conftest import SEND_TO_SELF

from d2lpar.bench import engines as be
from d2lpar.multiprocess import loopback, netem
from d2lpar.multiprocess.launcher import job_plan


def test_rates_are_parsed_and_typos_refused():
    assert netem.parse_rate('100mbit') == 100e6
    assert netem.parse_rate('1.5gbit') == 1.5e9
    with pytest.raises(ValueError, match="'5xbit' is not a tc rate"):
        netem.parse_rate('5xbit')


def test_bucket_holds_a_loopback_packet_and_little_more():
    """A bucket smaller than loopback's 64 KiB packets stalls every
    transfer; one much larger lets a step's gradients pass at memory
    speed, so it holds one packet, or 1 ms of traffic at high rates."""
    for rate in ('1mbit', '100mbit', '1gbit', '10gbit'):
        command = netem.tbf_command('lo', rate)
        burst = int(command[command.index('burst') + 1])
        assert burst == max(netem.MIN_BURST, netem.parse_rate(rate) / 8 * 1e-3)
        assert burst == netem.tbf_burst(rate)
        assert 64 * 1024 < netem.MIN_BURST < 1.1 * 64 * 1024


def test_job_plan_places_roles_on_hosts_in_turn():
    """Scheduler on the first host; servers and workers dealt in turn,
    each with its own address in DMLC_NODE_HOST and the first host's
    in DMLC_PS_ROOT_URI."""
    hosts = [netem.Host('10.0.0.1', ()), netem.Host('10.0.0.2', ())]
    plan = job_plan(['w'], workers=2, servers=2, port=1234, hosts=hosts)
    placed = {name: env['DMLC_NODE_HOST'] for name, _, env, _ in plan}
    assert placed == {
        'scheduler': '10.0.0.1',
        'server 0': '10.0.0.1',
        'server 1': '10.0.0.2',
        'worker 0': '10.0.0.1',
        'worker 1': '10.0.0.2',
    }
    assert {env['DMLC_PS_ROOT_URI'] for _, _, env, _ in plan} == {'10.0.0.1'}


@pytest.mark.skipif(
    netem.why_not(1) is not None, reason='no rate-limited namespace here'
)
def test_rate_limited_loopback_is_slower_than_the_rate_allows():
    """5 MB at 10 Mbit/s cannot arrive in less than 3 s (4 s at the full
    rate); the bytes are counted as usual."""
    status, sent = loopback.run_counting_bytes(
        [sys.executable, '-c', SEND_TO_SELF, '5000000', '3'],
        timeout=60,
        rate='10mbit',
    )
    assert status == 0
    assert 5_000_000 <= sent < 5_300_000


@pytest.mark.skipif(
    netem.why_not(1) is not None, reason='no rate-limited namespace here'
)
def test_a_message_after_an_idle_link_waits_for_its_bytes():
    """1 MB sent on a fresh, idle 10 Mbit/s link takes its 0.8 s (more
    than 0.7 s: the bucket passes only one packet at once), as on a real
    link; a bucket of a megabyte would let it through at once."""
    status, _ = loopback.run_counting_bytes(
        [sys.executable, '-c', SEND_TO_SELF, '1000000', '0.7'],
        timeout=60,
        rate='10mbit',
    )
    assert status == 0


@pytest.mark.skipif(
    netem.why_not(2) is not None, reason='two emulated hosts need root here'
)
def test_two_hosts_reach_each_other_only_over_the_link():
    """A process on host 2 reaches host 1's address; every byte it sends
    crosses the link and is counted, and the namespaces are gone after."""
    import subprocess

    listen = (
        'import socket; s = socket.socket(); s.bind(("10.99.0.1", '
        '5000)); s.listen(); c, _ = s.accept(); n = 0\n'
        'while True:\n    d = c.recv(65536)\n    n += len(d)\n'
        '    if not d: break\nprint(n)'
    )
    talk = (
        'import socket, time; time.sleep(1); '
        'c = socket.create_connection(("10.99.0.1", 5000)); '
        'c.sendall(b"x" * 1000000); c.close()'
    )
    with netem.EmulatedHosts('100mbit') as net:
        server = subprocess.Popen(
            [*net.hosts[0].prefix, sys.executable, '-c', listen],
            stdout=subprocess.PIPE,
            text=True,
        )
        subprocess.run(
            [*net.hosts[1].prefix, sys.executable, '-c', talk],
            check=True,
            timeout=60,
        )
        assert server.communicate(timeout=60)[0].strip() == '1000000'
        assert 1_000_000 <= net.sent() < 1_200_000
        names = net.names
    listed = subprocess.run(
        ['ip', 'netns', 'list'], capture_output=True, text=True
    ).stdout
    assert not any(name in listed for name in names)


def test_horovod_command_lists_every_host():
    hosts = [netem.Host('10.0.0.1', ()), netem.Host('10.0.0.2', ())]
    command = be.engine_command('horovod', 4, ['--epochs', '1'], hosts=hosts)
    assert command[command.index('-H') + 1] == '10.0.0.1:2,10.0.0.2:2'
    assert command[command.index('--network-interfaces') + 1] == 'veth0'
    real = be.engine_command('horovod', 4, [], hosts=hosts, interface='eth0')
    assert real[real.index('--network-interfaces') + 1] == 'eth0'


def test_portable_command_names_no_path_of_this_machine():
    """portable=True names bare python and horovodrun (what a reader
    copies to other hosts); the default runs this environment's own."""
    hosts = [netem.Host('10.0.0.1', ()), netem.Host('10.0.0.2', ())]
    for engine in ('kvstore', 'horovod'):
        command = be.engine_command(engine, 2, [], hosts=hosts, portable=True)
        assert not [a for a in command if os.sep in a], command
        assert 'python' in command
        assert sys.executable in be.engine_command(engine, 2, [], hosts=hosts)
    command = be.engine_command('horovod', 2, [], hosts=hosts, portable=True)
    assert command[0] == 'horovodrun'


@pytest.mark.skipif(
    netem.why_not(2) is not None, reason='two emulated hosts need root here'
)
def test_ssh_stand_in_runs_the_command_on_that_host():
    """`ssh [options] HOST [options] CMD`, as horovodrun writes it, runs
    CMD in HOST's namespace, where the machine's name resolves to that
    host's address; an unknown host fails as ssh does (255)."""
    import os
    import socket
    import subprocess

    with netem.EmulatedHosts(None) as net:
        env = dict(os.environ, **net.ssh_env())
        for host in net.hosts:
            run = subprocess.run(
                'ssh -o PasswordAuthentication=no -o '
                f'StrictHostKeyChecking=no {host.address} -o '
                "ConnectTimeout=5 'ip -o -4 addr show veth0'",
                shell=True,
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert f'inet {host.address}/24' in run.stdout
            # Its own name resolves to its own address (Gloo needs it).
            name = subprocess.run(
                [*host.prefix, 'getent', 'hosts', socket.gethostname()],
                capture_output=True,
                text=True,
            )
            assert name.stdout.split()[0] == host.address
        unknown = subprocess.run(
            ['ssh', '10.1.2.3', 'true'], env=env, capture_output=True
        )
        assert unknown.returncode == 255
