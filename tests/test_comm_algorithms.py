"""d2lpar.comm.algorithms: every allreduce leaves every device the sum
(the first part's naive one and its argument checks: test_collectives.py)."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp
from d2lpar.comm import ALGORITHMS, algorithms

TAUGHT = [
    dp.sharded_allreduce,
    dp.ring_allreduce,
    dp.doubling_allreduce,
]


@pytest.mark.parametrize('algorithm', TAUGHT)
@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
@pytest.mark.parametrize('shape', [(1,), (2,), (7,), (3, 5), (2, 3, 4, 5)])
def test_every_array_holds_the_sum(algorithm, k, shape):
    """After the allreduce each of k arrays equals the plain numpy sum
    (rtol 1e-6) and stays on its own device, also for arrays with fewer
    elements than devices or a size not divisible by k."""
    rng = onp.random.default_rng(k * 100 + len(shape))
    values = [rng.normal(size=shape).astype('float32') for _ in range(k)]
    data = [np.array(v, ctx=mx.cpu(i)) for i, v in enumerate(values)]
    algorithm(data)
    expected = onp.sum(values, axis=0)
    for i, a in enumerate(data):
        assert a.ctx == mx.cpu(i)
        assert_allclose(a.asnumpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('algorithm', TAUGHT)
def test_empty_list(algorithm):
    """An empty list is a ValueError naming the function."""
    with pytest.raises(ValueError, match=algorithm.__name__):
        algorithm([])


# Every benchmarked allreduce (the library's table) and the bucketed
# (flattened) variant under one contract, for k = 1..5 and sizes around k
# and beyond.
LADDER = {
    **ALGORITHMS,
    # One bucket per device holding this one array, reduced by the ring.
    'bucketed ring': lambda data: dp.bucketed_allreduce(
        [[a] for a in data], dp.ring_allreduce
    ),
}
RTOL = {'float32': 1e-6, 'float64': 1e-12}


def sizes(k):
    """1, k-1, k, k+1, and larger sizes divisible and not by k."""
    return sorted({1, max(k - 1, 1), k, k + 1, 1000, 997, 1001})


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
@pytest.mark.parametrize('name', LADDER)
def test_every_rung_sums_like_numpy(name, k, dtype):
    """Every array ends as numpy's sum (float64 reference; rtol 1e-6 for
    float32, 1e-12 for float64), keeps its dtype and device, and all k
    arrays are identical."""
    rng = onp.random.default_rng(k)
    for size in sizes(k):
        values = [rng.normal(size=size).astype(dtype) for _ in range(k)]
        data = [
            np.array(v, ctx=mx.cpu(i), dtype=dtype)
            for i, v in enumerate(values)
        ]
        LADDER[name](data)
        want = onp.sum([v.astype('float64') for v in values], axis=0)
        for i, a in enumerate(data):
            assert a.ctx == mx.cpu(i) and a.dtype == onp.dtype(dtype)
            assert_allclose(
                a.asnumpy(),
                want,
                rtol=RTOL[dtype],
                atol=RTOL[dtype],
                err_msg=f'size {size}',
            )
            assert_array_equal(
                a.asnumpy(),
                data[0].asnumpy(),
                err_msg=f'device {i} differs, size {size}',
            )


def test_receive_buffers_do_not_grow_with_sizes():
    """run_schedule keeps one receive buffer per (device, dtype, slot):
    reducing 50 different sizes leaves as many buffers as one size, each
    as large as the largest chunk, and free_buffers drops them all."""
    algorithms.free_buffers()
    devices = [mx.cpu(i) for i in range(3)]

    def reduce_size(n):
        data = [np.ones(n, ctx=d) for d in devices]
        dp.ring_allreduce(data)
        assert_array_equal(data[2].asnumpy(), onp.full(n, 3.0))

    reduce_size(300)
    one_size = len(algorithms._BUFFERS)
    for n in range(1, 301, 6):
        reduce_size(n)
    assert len(algorithms._BUFFERS) == one_size
    assert algorithms.free_buffers() == one_size * 100 * 4
    assert algorithms._BUFFERS == {}
