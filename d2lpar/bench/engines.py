"""Parameter server vs Horovod: step time and bytes, on loopback or on
an emulated network.

``python -m d2lpar bench engines`` runs the same worker
(:func:`d2lpar.dist.worker.run_worker`) on each engine, twice: a short and a
longer job. The difference between the two removes everything that does
not grow with the number of steps (start-up, the initial broadcast,
evaluation), so what is left is the cost of one training step. With
``--rate`` it measures the step time on an emulated network
(:mod:`d2lpar.dist.netem`) beside the cost model's prediction.
"""

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time

from mxnet import npx

from ..costmodel import allreduce_time
from ..data import load_fashion_mnist
from ..dist import netem
from ..dist.engines import ENGINES
from ..dist.launch import launch
from ..dist.loopback import run_counting_bytes
from ..dist.worker import worker_step
from ..model import LENET_SHAPES, init_lenet_params
from ..parameters import get_params

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


def engine_command(engine, workers, worker_args, timeout=600, servers=1):
    """The command that starts ``workers`` workers on ``engine``.

    Parameters
    ----------
    engine : {'kvstore', 'horovod'}
    workers : int
    worker_args : list of str
        Arguments for ``python -m d2lpar worker``.
    timeout : float, optional
        The launcher's time limit (parameter server).

    Returns
    -------
    list of str
    """
    worker = [PY, '-m', 'd2lpar', 'worker', '--engine', engine, *worker_args]
    if engine == 'kvstore':
        return [
            PY,
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
    if engine == 'horovod':
        return [
            _horovodrun() or 'horovodrun',
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
):
    """Run one training job; return its stats with ``bytes`` added.

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
            '1',
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
        elif engine != 'kvstore':
            raise RuntimeError(
                'two emulated hosts run the parameter '
                'server only (horovodrun needs ssh)'
            )
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
    return dict(stats['epochs'][0], bytes=sent)


def measure_engine(
    engine,
    workers=2,
    batch_size=128,
    steps=(10, 40),
    num_test=512,
    timeout=600,
    servers=1,
):
    """Seconds and loopback bytes of one training step on ``engine``.

    Parameters
    ----------
    engine : {'kvstore', 'horovod'}
    workers : int, optional
    batch_size : int, optional
        Examples per worker per step.
    steps : (int, int), optional
        Steps of the short and the long job.
    num_test : int, optional
    timeout : float, optional
        Seconds each job may take.

    Returns
    -------
    dict
        ``engine``, ``workers``, ``sec_per_step`` (the long job's training
        time over its steps), ``bytes_per_step`` (extra bytes of the long
        job over the short one, per extra step; None where bytes cannot
        be counted), ``test_acc`` (the long job's).
    """
    global_batch = batch_size * workers
    short, long = (
        run_job(
            engine,
            workers,
            batch_size,
            s * global_batch,
            num_test,
            timeout,
            servers,
        )
        for s in steps
    )
    per_step = None
    if short['bytes'] is not None and long['bytes'] is not None:
        per_step = (long['bytes'] - short['bytes']) / (
            long['steps'] - short['steps']
        )
    return {
        'engine': engine,
        'workers': workers,
        'servers': servers,
        'sec_per_step': long['seconds'] / long['steps'],
        'bytes_per_step': per_step,
        'test_acc': long['test_acc'],
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


class _Alone:
    """An engine of one worker that sums nothing: compute only."""

    rank, num_workers = 0, 1

    def sum_(self, arrays, first_key=0):
        pass


def compute_seconds(batch_size=64, steps=20):
    """Seconds of one worker's step without communication, in-process.

    The same :func:`d2lpar.dist.worker.worker_step`, on a minibatch of
    ``batch_size``, with an engine that does not communicate.
    """
    params = get_params(init_lenet_params(0, 0.1), npx.cpu())
    train_iter, _ = load_fashion_mnist(
        batch_size, num_train=batch_size, num_test=batch_size, seed=0
    )
    X, y = next(iter(train_iter))
    worker_step(_Alone(), X, y, params, 0.1, batch_size)  # warm-up
    npx.waitall()
    start = time.perf_counter()
    for _ in range(steps):
        worker_step(_Alone(), X, y, params, 0.1, batch_size)
    npx.waitall()
    return (time.perf_counter() - start) / steps


def model_shape(servers, hosts):
    """The cost model's algorithm for a parameter-server placement.

    On one host every process shares one loopback: all ``2kN`` bytes of
    a step (each worker pushes and pulls ``N``) cross the same link,
    whatever the servers, as in the ``'cpu'`` shape. On two hosts, with
    worker ``i`` and server ``i`` on host ``i``, one server is the naive
    reduce onto host 0's device; one server per worker is the sharded
    allreduce.
    """
    if hosts == 1:
        return 'cpu'
    return 'naive' if servers == 1 else 'sharded'


def predict_step(compute, rate, servers=1, hosts=1, workers=2, latency=50e-6):
    """Predicted seconds per step: compute plus the model's transfers.

    Parameters
    ----------
    compute : float
        Seconds of one worker's step without communication
        (:func:`compute_seconds`).
    rate : str
        The link's rate (``'100mbit'``).
    servers, hosts, workers : int, optional
    latency : float, optional
        Seconds per message (alpha).
    """
    bandwidth = netem.parse_rate(rate) / 8
    return compute + allreduce_time(
        model_shape(servers, hosts),
        workers,
        gradient_bytes(),
        bandwidth,
        latency,
    )


def measure_network(
    rates,
    servers=(1, 2),
    hosts=1,
    workers=2,
    batch_size=64,
    steps=20,
    num_test=256,
    timeout=300,
):
    """Step time on an emulated network at each rate, and the model's.

    One job per (servers, rate). Returns a list of dicts: ``servers``,
    ``hosts``, ``rate``, ``sec_per_step`` (measured), ``predicted``,
    ``compute`` (seconds without communication), ``bytes_per_step``
    (bytes of the whole job over its steps: an upper bound that
    includes start-up and evaluation).

    Raises
    ------
    RuntimeError
        Where this machine cannot emulate the network (see
        :func:`d2lpar.dist.netem.why_not`).
    """
    for rate in rates:
        netem.parse_rate(rate)  # a typo fails here, not in a job
    reason = netem.why_not(hosts)
    if reason:
        raise RuntimeError(f'cannot emulate the network here: {reason}')
    compute = compute_seconds(batch_size)
    rows = []
    for s in servers:
        for rate in rates:
            job = run_job(
                'kvstore',
                workers,
                batch_size,
                steps * batch_size * workers,
                num_test,
                timeout,
                s,
                rate,
                hosts,
            )
            rows.append(
                {
                    'servers': s,
                    'hosts': hosts,
                    'rate': rate,
                    'sec_per_step': job['seconds'] / job['steps'],
                    'predicted': predict_step(
                        compute, rate, s, hosts, workers
                    ),
                    'compute': compute,
                    'bytes_per_step': job['bytes'] / job['steps'],
                }
            )
    return rows


def format_network(rows):
    """A table of :func:`measure_network` rows."""
    n = gradient_bytes()
    lines = [
        f'gradients N = {n / 1e6:.2f} MB; compute alone '
        f'{1e3 * rows[0]["compute"]:.1f} ms per step'
        if rows
        else '',
        f'{"hosts":>5} {"servers":>7} {"rate":>8} {"ms/step":>8} '
        f'{"model":>7} {"ratio":>6} {"job MB/step":>11}',
    ]
    for r in rows:
        lines.append(
            f'{r["hosts"]:>5} {r["servers"]:>7} {r["rate"]:>8} '
            f'{1e3 * r["sec_per_step"]:8.1f} {1e3 * r["predicted"]:7.1f} '
            f'{r["sec_per_step"] / r["predicted"]:6.2f} '
            f'{r["bytes_per_step"] / 1e6:11.2f}'
        )
    return '\n'.join(lines)
