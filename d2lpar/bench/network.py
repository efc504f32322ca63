"""Step time on an emulated network, beside the cost model's prediction.

``python -m d2lpar bench engines --rate 100mbit`` (and the chapter on
several hosts) runs the jobs of :mod:`d2lpar.bench.engines` on a network
limited by :mod:`d2lpar.dist.netem`, on one host or on two emulated
hosts, and sets each measured step beside what :mod:`d2lpar.costmodel`
predicts from the bytes each placement sends.
"""

import time

from mxnet import npx

from ..costmodel import allreduce_time, engine_bytes
from ..data import load_fashion_mnist
from ..dist import netem
from ..dist.worker import worker_step
from ..model import LENET_SHAPES, init_lenet_params
from ..parameters import get_params
from .engines import gradient_bytes, run_job


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
    ``w % hosts`` (:func:`d2lpar.dist.launch.job_plan`). In the push
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
    servers, hosts, workers : int, optional
        ``servers`` counts for the parameter server only.
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
        :func:`d2lpar.dist.netem.why_not`), or a job fails.
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
    """A table of :func:`measure_network` rows."""
    n = gradient_bytes()
    lines = [
        f'gradients N = {n / 1e6:.2f} MB; compute alone '
        f'{1e3 * rows[0]["compute"]:.1f} ms per step'
        if rows
        else '',
        f'{"setup":>22} {"rate":>8} {"ms/step":>8} '
        f'{"model":>7} {"ratio":>6} {"job MB/step":>11}',
    ]
    for r in rows:
        lines.append(
            f'{setup_name(r):>22} {r["rate"]:>8} '
            f'{1e3 * r["sec_per_step"]:8.1f} {1e3 * r["predicted"]:7.1f} '
            f'{r["sec_per_step"] / r["predicted"]:6.2f} '
            f'{r["bytes_per_step"] / 1e6:11.2f}'
        )
    return '\n'.join(lines)


def _sharing(row):
    """Which processes of a job share the cores with its compute."""
    if row['engine'] == 'horovod':
        return 'horovodrun and the workers'
    return 'the scheduler, the servers and the workers'


def explain_network(rows, close=0.25):
    """One sentence per :func:`measure_network` row: model against
    measurement, and where they differ by more than ``close``, why.

    Three reasons are told apart: MXNet's placement of whole arrays
    (the row's ``placed`` model); transfers that overlap each other and
    the compute (faster than the model); and a fixed cost per step the
    model leaves out, measured as the excess at the fastest rate of the
    same setup, after which the transfers alone are compared.
    """
    return [_explain(r, rows, close) for r in rows]


def _explain(r, rows, close):
    text = (
        f'{setup_name(r)} at {r["rate"]}: {1e3 * r["sec_per_step"]:.0f} '
        f'ms against {1e3 * r["predicted"]:.0f} ms predicted'
    )
    model = r['predicted']
    if abs(r['sec_per_step'] / model - 1) <= close:
        return text + f', within {close:.0%} of it.'
    if r.get('placed') and abs(r['placed'] / model - 1) > 0.05:
        text += (
            f'; MXNet puts each array smaller than {BIGARRAY_BOUND:,} '
            f'elements whole on one server (key times 9973, modulo the '
            f'servers), so server 0 holds '
            f'{max(server_bytes(r["servers"])) / 1e3:.0f} of the '
            f'{gradient_bytes() / 1e3:.0f} kB (every weight matrix), not '
            f'half: with the bytes as placed the model gives '
            f'{1e3 * r["placed"]:.0f} ms'
        )
        model = r['placed']
    if abs(r['sec_per_step'] / model - 1) <= close:
        return text + f', within {close:.0%} of it.'
    same = [q for q in rows if setup_name(q) == setup_name(r)]
    fastest = max(same, key=lambda q: netem.parse_rate(q['rate']))
    fixed = fastest['sec_per_step'] - (
        fastest.get('placed') or fastest['predicted']
    )
    if r['sec_per_step'] < model:
        return text + (
            '; faster than the model: the transfers of successive arrays '
            'overlap each other and the compute, where the model adds '
            'them up.'
        )
    if len(same) == 1:
        return text + (
            '; only one rate was measured for it (a quick build), so the '
            'cost per step that the model leaves out cannot be told apart '
            'from the transfers.'
        )
    if r is fastest:
        return text + (
            f'; at this, its fastest rate, transfers cost little, so the '
            f'{1e3 * fixed:.0f} ms are a cost per step the model leaves '
            f"out (the processes' own work: {_sharing(r)} share this "
            f"machine's cores with the compute)."
        )
    transfer = r['sec_per_step'] - r['compute'] - max(fixed, 0.0)
    modelled = model - r['compute']
    text += (
        f'; less the {1e3 * max(fixed, 0.0):.0f} ms it also took at its '
        f'fastest rate (a cost per step the model leaves out), the '
        f"transfers took {1e3 * transfer:.0f} ms against the model's "
        f'{1e3 * modelled:.0f} ms, '
    )
    if abs(transfer / modelled - 1) <= close:
        return text + f'which agree within {close:.0%}.'
    rate = netem.parse_rate(r['rate']) * modelled / max(transfer, 1e-9)
    text += (
        f'which still differ by more than {close:.0%}: the link behaved '
        f'like one of {rate / 1e6:.0f} Mbit/s'
    )
    sent = engine_bytes('horovod', r.get('workers', 2), gradient_bytes())
    if (
        r['engine'] == 'horovod'
        and r['hosts'] > 1
        and r.get('bytes_per_step')
        and abs(r['bytes_per_step'] / sent[0] - 1) <= close
    ):
        # The ring's model lets both directions of the link carry their
        # share at once; with the bytes as the model counts them, compare
        # with the two directions taking turns.
        turns = 2 * modelled
        verdict = (
            'which fits'
            if abs(transfer / turns - 1) <= close
            else 'which does not fit either'
        )
        text += (
            f'. The bytes crossing the link, {r["bytes_per_step"] / 1e6:.2f}'
            f" MB per step, are within {close:.0%} of the model's "
            f'{sent[0] / 1e6:.2f} MB, so the time is lost elsewhere: if '
            f'the two directions took turns instead '
            f'of overlapping, the model would give {1e3 * turns:.0f} ms, '
            f'{verdict}'
        )
    return text + '.'
