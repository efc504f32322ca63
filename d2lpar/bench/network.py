"""Step time on an emulated network, beside the cost model's prediction.

``python -m d2lpar bench engines --rate 100mbit`` (and
:doc:`/book/several-hosts`) runs the jobs of :mod:`d2lpar.bench.engines`
on a network limited by :mod:`d2lpar.multiprocess.netem`, on one host or
on two emulated hosts, and sets each measured step beside what
:mod:`d2lpar.comm.costmodel` predicts from the bytes each placement sends.
"""

from mxnet import npx

from ..comm.costmodel import allreduce_time
from ..data import load_fashion_mnist
from ..model import LENET_SHAPES, init_lenet_params
from ..multiprocess import netem
from ..multiprocess.worker import worker_step
from ..parameters import get_params
from ..threads import share_cores
from .engines import gradient_bytes, run_job
from .step import in_fresh_process_each
from .timing import seconds_each


class _Alone:
    """An engine of one worker that sums nothing: compute only."""

    rank, num_workers = 0, 1

    def sum_(self, arrays, first_key=0):
        pass


def compute_seconds(batch_size=64, steps=20, workers=2):
    """Seconds of one worker's step without communication.

    The same :func:`d2lpar.multiprocess.worker_step`, on a minibatch of
    ``batch_size``, with an engine that does not communicate, in a fresh
    process whose ``cpu(0)`` has the threads each of ``workers`` workers
    gets (:func:`d2lpar.threads.share_cores`), timed step by step
    (:func:`d2lpar.bench.seconds_each`). The fastest of the
    ``steps`` is returned: on a machine that other processes load, a
    step whose threads wait for a busy core takes several times longer,
    and the fastest step is the one least touched by that.
    """
    (seconds,) = in_fresh_process_each(
        {}, _compute_here, [(batch_size, steps, workers)], timeout=600
    )
    return seconds


def _compute_here(batch_size, steps, workers):
    share_cores(workers)
    params = get_params(init_lenet_params(0, 0.1), npx.cpu())
    train_iter, _ = load_fashion_mnist(
        batch_size, num_train=batch_size, num_test=batch_size, seed=0
    )
    X, y = next(iter(train_iter))
    times = seconds_each(
        lambda: worker_step(_Alone(), X, y, params, 0.1, batch_size),
        repeats=steps,
        warmup=1,
    )
    return min(times)


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


def model_transfer(engine, servers, hosts, workers, bandwidth, latency):
    """Seconds the cost model gives one step's transfers.

    The parameter server follows :func:`model_shape`. Horovod's ring
    sends ``2(k-1)`` messages of ``N/k`` per worker; on two hosts each
    host's link carries its worker's messages (the ``'ring'`` shape), on
    one host every worker's messages share the one loopback.
    """
    n = gradient_bytes()
    if engine == 'kvstore':
        return allreduce_time(
            model_shape(servers, hosts), workers, n, bandwidth, latency
        )
    if engine != 'horovod':
        raise ValueError(f'unknown engine {engine!r}: use kvstore or horovod')
    if hosts == 1:
        messages = 2 * (workers - 1) * workers
        return messages * (latency + n / workers / bandwidth)
    return allreduce_time('ring', workers, n, bandwidth, latency)


# MXNet's kvstore puts an array smaller than this many elements whole on
# one server (MXNET_KVSTORE_BIGARRAY_BOUND); larger ones are cut evenly.
BIGARRAY_BOUND = 1_000_000


def server_bytes(servers):
    """Bytes of LeNet's gradients each parameter server holds.

    MXNet (``kvstore_dist.h``) sends the array under key ``i`` whole to
    server ``(i * 9973) % servers`` when it has fewer than
    :data:`BIGARRAY_BOUND` elements, and cuts larger ones evenly. The
    worker stores parameter ``i`` under key ``i``.
    """
    held = [0.0] * servers
    for key, (_, shape) in enumerate(LENET_SHAPES):
        size = 1
        for d in shape:
            size *= d
        if size < BIGARRAY_BOUND:
            held[key * 9973 % servers] += 4 * size
        else:
            held = [h + 4 * size / servers for h in held]
    return held


def placed_transfer(servers, bandwidth, hosts=2, workers=2, latency=50e-6):
    """Seconds of a parameter-server step's transfers, array by array.

    Server ``s`` and worker ``w`` sit on hosts ``s % hosts`` and
    ``w % hosts`` (:func:`d2lpar.multiprocess.job_plan`). In the push
    phase each host's link sends the bytes its workers push to servers
    on other hosts; in the pull phase the same bytes come back. The
    busiest link of each phase sets its pace, as in the cost model, but
    with the bytes each server really holds (:func:`server_bytes`)
    rather than an even share.
    """
    held = server_bytes(servers)
    push, pull = [0.0] * hosts, [0.0] * hosts
    for w in range(workers):
        for s, nbytes in enumerate(held):
            if w % hosts != s % hosts:  # crosses the link
                push[w % hosts] += nbytes
                pull[s % hosts] += nbytes
    messages = 2 * len(LENET_SHAPES)  # a push and a pull per array
    return messages * latency + (max(push) + max(pull)) / bandwidth


def predict_step(
    compute,
    rate,
    servers=1,
    hosts=1,
    workers=2,
    latency=50e-6,
    engine='kvstore',
):
    """Predicted seconds per step: compute plus the model's transfers.

    Parameters
    ----------
    compute : float
        Seconds of one worker's step without communication
        (:func:`compute_seconds`).
    rate : str
        The link's rate (``'100mbit'``).
    servers : int, optional
        Parameter servers (for ``engine='kvstore'`` only).
    hosts : int, optional
        Hosts the workers are spread over.
    workers : int, optional
        Worker processes.
    latency : float, optional
        Seconds per message (alpha).
    engine : {'kvstore', 'horovod'}, optional
    """
    bandwidth = netem.parse_rate(rate) / 8
    return compute + model_transfer(
        engine, servers, hosts, workers, bandwidth, latency
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
    engines=('kvstore',),
    compute=None,
):
    """Step time on an emulated network at each rate, and the model's.

    One job per (engine, servers, rate): the parameter server with each
    number of ``servers``, Horovod once per rate. Returns a list of
    dicts: ``engine``, ``servers`` (None for Horovod), ``hosts``,
    ``rate``, ``sec_per_step`` (measured), ``predicted`` (the cost
    model), ``placed`` (the parameter server on two hosts: the model
    with the bytes each server really holds, :func:`placed_transfer`;
    else None), ``compute``
    (seconds without communication), ``bytes_per_step`` (bytes of the
    whole job over its steps: an upper bound that includes start-up and
    evaluation). ``compute`` is :func:`compute_seconds` (measured here
    unless given).

    Raises
    ------
    RuntimeError
        Where this machine cannot emulate the network (see
        :func:`d2lpar.multiprocess.why_not`), or a job fails.
    """
    for rate in rates:
        netem.parse_rate(rate)  # a typo fails here, not in a job
    reason = netem.why_not(hosts)
    if reason:
        raise RuntimeError(f'cannot emulate the network here: {reason}')
    if compute is None:  # seconds of a step without communication
        compute = compute_seconds(batch_size)
    setups = [(e, s) for e in engines if e == 'kvstore' for s in servers]
    setups += [(e, None) for e in engines if e != 'kvstore']
    rows = []
    for engine, s in setups:
        for rate in rates:
            job = run_job(
                engine,
                workers,
                batch_size,
                steps * batch_size * workers,
                num_test,
                timeout,
                s or 1,
                rate,
                hosts,
            )
            rows.append(
                {
                    'engine': engine,
                    'workers': workers,
                    'servers': s,
                    'hosts': hosts,
                    'rate': rate,
                    'sec_per_step': job['seconds'] / job['steps'],
                    'predicted': predict_step(
                        compute, rate, s, hosts, workers, engine=engine
                    ),
                    'placed': compute
                    + placed_transfer(
                        s, netem.parse_rate(rate) / 8, hosts, workers
                    )
                    if engine == 'kvstore' and hosts > 1
                    else None,
                    'compute': compute,
                    'bytes_per_step': job['bytes'] / job['steps'],
                }
            )
    return rows


def setup_name(row):
    """``'2 hosts, PS 1 server'`` or ``'1 host, Horovod'`` for a row."""
    where = f'{row["hosts"]} host{"s" if row["hosts"] > 1 else ""}'
    if row['engine'] == 'horovod':
        return f'{where}, Horovod'
    s = row['servers']
    return f'{where}, PS {s} server{"s" if s > 1 else ""}'


def format_network(rows):
    """A table of :func:`measure_network` rows: measured, the cost model,
    the model with the arrays as MXNet places them (parameter server on
    two hosts only), and measured over the better of the two models
    (:func:`best_model`)."""
    n = gradient_bytes()
    lines = [
        f'gradients N = {n / 1e6:.2f} MB; compute alone '
        f'{1e3 * rows[0]["compute"]:.1f} ms per step'
        if rows
        else '',
        f'{"setup":>22} {"rate":>8} {"ms/step":>8} {"model":>7} '
        f'{"placed":>7} {"ratio":>6} {"job MB/step":>11}',
    ]
    for r in rows:
        placed = f'{1e3 * r["placed"]:7.1f}' if r['placed'] else f'{"":>7}'
        lines.append(
            f'{setup_name(r):>22} {r["rate"]:>8} '
            f'{1e3 * r["sec_per_step"]:8.1f} {1e3 * r["predicted"]:7.1f} '
            f'{placed} {r["sec_per_step"] / best_model(r):6.2f} '
            f'{r["bytes_per_step"] / 1e6:11.2f}'
        )
    return '\n'.join(lines)


def best_model(row):
    """Seconds per step of the row's best model: the arrays as placed
    (:func:`placed_transfer`) where the row has it, else the cost
    model's shape (:func:`predict_step`)."""
    return row.get('placed') or row['predicted']


def fixed_cost(rows, setup):
    """What a setup's step costs beyond its model, told apart from the
    transfers, from the rows of :func:`measure_network`.

    At the fastest rate the excess of the measured step over the model
    (:func:`best_model`) is taken as a cost per step that the model
    leaves out (processes sharing the cores, the scheduler's messages,
    a mean step against the fastest compute step), assumed the same at
    every rate; at the slowest rate that cost is taken off
    the measured step, and what remains beyond the compute is set beside
    the model's transfer time.

    Parameters
    ----------
    rows : list of dict
    setup : str
        A :func:`setup_name`, e.g. ``'2 hosts, PS 1 server'``.

    Returns
    -------
    dict or None
        ``fixed`` (seconds, at the fastest rate), ``transfer`` and
        ``modelled`` (seconds of transfers at the slowest rate, measured
        less compute and ``fixed``, and the model's), or None if the
        setup was measured at fewer than two rates.
    """
    same = [r for r in rows if setup_name(r) == setup]
    if len({r['rate'] for r in same}) < 2:
        return None
    fast = max(same, key=lambda r: netem.parse_rate(r['rate']))
    slow = min(same, key=lambda r: netem.parse_rate(r['rate']))
    fixed = fast['sec_per_step'] - best_model(fast)
    return {
        'fixed': fixed,
        'transfer': slow['sec_per_step'] - slow['compute'] - fixed,
        'modelled': best_model(slow) - slow['compute'],
    }
