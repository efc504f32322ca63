"""Parameter server vs Horovod: step time and bytes on loopback.

``python -m d2lpar bench engines`` runs the same worker
(:func:`d2lpar.multiprocess.run_worker`) on each engine, in one job of two
epochs. The first holds everything that happens once (start-up, the
initial broadcast, the first steps' set-up); the second is what one
epoch of training steps costs: its time, and its bytes, which rank 0
reads off the job's private loopback at each epoch's end. With
``--rate`` it measures the step time on an emulated network instead
(:mod:`d2lpar.bench.network`).
"""

import importlib.util
import json
import os
import shutil
import sys
import tempfile

from ..model import LENET_SHAPES
from ..multiprocess import netem
from ..multiprocess.engines import ENGINES
from ..multiprocess.launcher import launch
from ..multiprocess.loopback import run_counting_bytes, run_with_env

PY = sys.executable


def gradient_bytes():
    """Bytes of LeNet's gradients (float32): the ``N`` of the cost model."""
    sizes = [1] * len(LENET_SHAPES)
    for i, (_, shape) in enumerate(LENET_SHAPES):
        for d in shape:
            sizes[i] *= d
    return 4 * sum(sizes)


def available_engines():
    """Engines this environment can run: ``kvstore``, and ``horovod`` if
    Horovod is installed (``make horovod``)."""
    engines = ['kvstore']
    if importlib.util.find_spec('horovod') and _horovodrun():
        engines.append('horovod')
    return engines


def _horovodrun():
    here = os.path.join(os.path.dirname(PY), 'horovodrun')
    return here if os.path.exists(here) else shutil.which('horovodrun')


def engine_command(
    engine,
    workers,
    worker_args,
    timeout=600,
    servers=1,
    hosts=None,
    interface=netem.DEVICE,
    portable=False,
):
    """The command that starts ``workers`` workers on ``engine``.

    Parameters
    ----------
    engine : {'kvstore', 'horovod'}
    workers : int
    worker_args : list of str
        Arguments for ``python -m d2lpar worker``.
    timeout : float, optional
        The launcher's time limit (parameter server).
    servers : int, optional
    hosts : list of d2lpar.multiprocess.Host, optional
        Horovod: the hosts for ``-H`` (workers dealt evenly); default
        this one.
    interface : str, optional
        Horovod on ``hosts``: the network interface they reach each other
        on; default the emulated hosts'
        :data:`d2lpar.multiprocess.netem.DEVICE`.
    portable : bool, optional
        False (default): this environment's absolute paths of ``python``
        and ``horovodrun``, which the benchmark runs. True: the bare
        names, for a command a reader copies to hosts where the same
        environment is active (``horovodrun`` passes ``PATH`` on to the
        workers it starts).

    Returns
    -------
    list of str
    """
    py = 'python' if portable else PY
    hvd = 'horovodrun' if portable else _horovodrun() or 'horovodrun'
    worker = [py, '-m', 'd2lpar', 'worker', '--engine', engine, *worker_args]
    if engine == 'kvstore':
        return [
            py,
            '-m',
            'd2lpar',
            'launch',
            '--workers',
            str(workers),
            '--servers',
            str(servers),
            '--timeout',
            str(timeout),
            '--',
            *worker,
        ]
    if engine == 'horovod' and hosts:
        slots = -(-workers // len(hosts))
        listed = ','.join(f'{h.address}:{slots}' for h in hosts)
        return [
            hvd,
            '-np',
            str(workers),
            '-H',
            listed,
            '--gloo',
            '--network-interfaces',
            interface,
            *worker,
        ]
    if engine == 'horovod':
        return [
            hvd,
            '-np',
            str(workers),
            '-H',
            f'localhost:{workers}',
            '--gloo',
            *worker,
        ]
    raise ValueError(
        f'unknown engine {engine!r}: use one of {", ".join(ENGINES)}'
    )


def run_job(
    engine,
    workers,
    batch_size,
    num_train,
    num_test,
    timeout,
    servers=1,
    rate=None,
    hosts=1,
    epochs=1,
):
    """Run one training job; return its last epoch's stats, with
    ``bytes`` (the whole job's) and ``epochs`` (every epoch's stats).

    ``rate`` limits the network (``'100mbit'``); ``hosts=2`` places the
    workers on two emulated hosts, and ``bytes`` is then what crossed
    the link between them.

    Raises
    ------
    RuntimeError
        If the job fails (its output above says why), or the network
        cannot be emulated here.
    """
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = os.path.join(tmp, 'stats.json')
        args = [
            '--epochs',
            str(epochs),
            '--batch-size',
            str(batch_size),
            '--num-train',
            str(num_train),
            '--num-test',
            str(num_test),
            '--stats-to',
            stats_path,
        ]
        command = engine_command(engine, workers, args, timeout, servers)
        if hosts == 1:
            status, sent = run_counting_bytes(command, timeout + 30, rate)
        elif engine == 'horovod':
            with netem.EmulatedHosts(rate) as net:
                # horovodrun on the first host; ssh reaches the second.
                command = engine_command(
                    engine, workers, args, hosts=net.hosts
                )
                status = run_with_env(
                    [*net.hosts[0].prefix, *command],
                    timeout + 30,
                    net.ssh_env(),
                )
                sent = net.sent()
        else:
            with netem.EmulatedHosts(rate) as net:
                status = launch(
                    command[command.index('--') + 1 :],
                    workers,
                    servers,
                    timeout=timeout,
                    hosts=net.hosts,
                )
                sent = net.sent()
        if status != 0 or not os.path.exists(stats_path):
            raise RuntimeError(
                f'the {engine} job failed (status {status}):'
                f' {" ".join(command)}'
            )
        with open(stats_path) as f:
            stats = json.load(f)
    return dict(stats['epochs'][-1], bytes=sent, epochs=stats['epochs'])


def measure_engine(
    engine,
    workers=2,
    batch_size=128,
    steps=20,
    num_test=512,
    timeout=600,
    servers=1,
):
    """Seconds and loopback bytes of one training step on ``engine``.

    One job of two epochs of ``steps`` steps each, in a network namespace
    of its own (:func:`d2lpar.multiprocess.run_counting_bytes`). The
    second epoch is measured: the first holds the start-up.

    Parameters
    ----------
    engine : {'kvstore', 'horovod'}
    workers : int, optional
    batch_size : int, optional
        Examples per worker per step.
    steps : int, optional
        Steps per epoch.
    num_test : int, optional
    timeout : float, optional
        Seconds the job may take.
    servers : int, optional
        The parameter server's servers.

    Returns
    -------
    dict
        ``engine``, ``workers``, ``servers``, ``sec_per_step`` (the second
        epoch's training time over its steps), ``bytes_per_step`` (the
        loopback's bytes between the two epochs' ends, over the second
        epoch's steps: its steps and the few bytes of its test sums; None
        where the job could not have a namespace of its own),
        ``test_acc`` (after the second epoch).
    """
    job = run_job(
        engine,
        workers,
        batch_size,
        steps * batch_size * workers,
        num_test,
        timeout,
        servers,
        epochs=2,
    )
    first, second = job['epochs']
    per_step = None
    counted = (job['bytes'], first['loopback_bytes'], second['loopback_bytes'])
    if None not in counted:
        per_step = (
            second['loopback_bytes'] - first['loopback_bytes']
        ) / second['steps']
    return {
        'engine': engine,
        'workers': workers,
        'servers': servers,
        'sec_per_step': second['seconds'] / second['steps'],
        'bytes_per_step': per_step,
        'test_acc': second['test_acc'],
    }


def format_engines(rows):
    """A table of :func:`measure_engine` results, with the cost model."""
    n = gradient_bytes()
    lines = [
        f'gradients N = {n / 1e6:.2f} MB per step',
        f'{"engine":>8} {"workers":>7} {"ms/step":>8} '
        f'{"MB/step":>8} {"x N":>6}',
    ]
    for r in rows:
        sent = r['bytes_per_step']
        mb = f'{sent / 1e6:8.2f}' if sent is not None else f'{"n/a":>8}'
        ratio = f'{sent / n:6.2f}' if sent is not None else f'{"n/a":>6}'
        lines.append(
            f'{r["engine"]:>8} {r["workers"]:>7} '
            f'{1e3 * r["sec_per_step"]:8.1f} {mb} {ratio}'
        )
    return '\n'.join(lines)
