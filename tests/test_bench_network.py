"""d2lpar.bench.network: the cost model of a step on emulated hosts
(shape by placement, bytes per server, transfers as placed) and the
table that judges each measured row by its best model."""

import numpy as np
import pytest

import d2lpar as dp
from d2lpar.bench import engines as be
from d2lpar.bench import network as bn


def test_model_shape_follows_the_placement():
    """One host is the CPU shape whatever the servers; on two hosts one
    server is the naive shape, two the sharded one; a step predicted on
    one host is compute plus the CPU shape's allreduce at the rate."""
    assert bn.model_shape(1, hosts=1) == bn.model_shape(2, hosts=1) == 'cpu'
    assert bn.model_shape(1, hosts=2) == 'naive'
    assert bn.model_shape(2, hosts=2) == 'sharded'
    n = be.gradient_bytes()
    fast = bn.predict_step(0.01, '10gbit')
    slow = bn.predict_step(0.01, '100mbit')
    assert slow - 0.01 == pytest.approx(
        dp.comm.allreduce_time('cpu', 2, n, 100e6 / 8, 50e-6)
    )
    assert fast < slow


def test_servers_hold_arrays_whole_by_key():
    """MXNet's placement: every byte on exactly one server; with two
    servers the even keys (LeNet's weight matrices) all land on server
    0, so it holds nearly everything."""
    n = be.gradient_bytes()
    for servers in (1, 2, 3):
        assert sum(bn.server_bytes(servers)) == n
    weights = sum(
        4 * int(np.prod(shape))
        for name, shape in dp.LENET_SHAPES
        if name.startswith('W')
    )
    assert bn.server_bytes(2)[0] == weights


def test_placed_transfer_matches_the_model_where_the_split_is_known():
    """One server on two hosts is the naive shape (push N, pull N over
    the link); two servers holding arrays as MXNet places them cost
    about as much, twice the sharded model's even split."""
    n, bw = be.gradient_bytes(), 100e6 / 8
    naive = dp.comm.allreduce_time('naive', 2, n, bw)
    sharded = dp.comm.allreduce_time('sharded', 2, n, bw)
    one = bn.placed_transfer(1, bw, latency=0.0)
    two = bn.placed_transfer(2, bw, latency=0.0)
    assert one == pytest.approx(naive)
    assert two == pytest.approx(2 * sharded, rel=0.01)


def test_horovod_on_one_host_shares_one_link():
    """Horovod's ring on one loopback: 2(k-1) messages of N/k per
    worker, every worker's on the same link: 2(k-1)N bytes in all."""
    n, bw = be.gradient_bytes(), 1e9 / 8
    for k in (2, 3, 4):
        got = bn.model_transfer('horovod', None, 1, k, bw, 0.0)
        assert got == pytest.approx(2 * (k - 1) * n / bw)
    two_hosts = bn.model_transfer('horovod', None, 2, 2, bw, 0.0)
    assert two_hosts == pytest.approx(dp.comm.allreduce_time('ring', 2, n, bw))


def network_row(rate, measured, predicted, placed=None, servers=1):
    return dict(
        engine='kvstore',
        servers=servers,
        hosts=2,
        rate=rate,
        sec_per_step=measured,
        predicted=predicted,
        placed=placed,
        compute=0.1,
    )


def test_best_model_prefers_the_arrays_as_placed():
    """A row with a placed model is judged against it; a row without one
    (one host, Horovod) against the cost model's shape."""
    assert bn.best_model(network_row('1gbit', 0.2, 0.1, placed=0.15)) == 0.15
    assert bn.best_model(network_row('1gbit', 0.2, 0.1)) == 0.1


def test_fixed_cost_is_taken_at_the_fastest_rate():
    """The excess over the model at the fastest rate is the fixed cost
    (0.20 - 0.15 = 50 ms); at the slowest rate it is taken off with the
    compute (0.45 - 0.1 - 0.05 = 300 ms of transfers against the model's
    0.35 - 0.1 = 250 ms), whatever order the rows come in; one rate
    gives None."""
    rows = [
        network_row('100mbit', 0.45, 0.35),
        network_row('1gbit', 0.20, 0.15),
    ]
    got = bn.fixed_cost(rows, '2 hosts, PS 1 server')
    np.testing.assert_allclose(
        [got['fixed'], got['transfer'], got['modelled']],
        [0.05, 0.30, 0.25],
        rtol=1e-12,
    )
    assert bn.fixed_cost(rows[:1], '2 hosts, PS 1 server') is None
    assert bn.fixed_cost(rows, '2 hosts, PS 2 servers') is None


def test_table_judges_each_row_by_its_best_model():
    """The ratio column divides by the placed model where there is one
    (0.2 / 0.16 = 1.25), not by the cost model's shape (2.00)."""
    row = network_row('1gbit', 0.2, 0.1, placed=0.16, servers=2)
    row['bytes_per_step'] = 1e6
    line = bn.format_network([row]).splitlines()[-1]
    assert '  1.25 ' in line and '2.00' not in line
