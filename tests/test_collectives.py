"""d2lpar.collectives: every allreduce leaves every device the sum."""
import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp


ALGORITHMS = [dp.allreduce, dp.sharded_allreduce, dp.ring_allreduce]


@pytest.mark.parametrize('algorithm', ALGORITHMS)
@pytest.mark.parametrize('k', [1, 2, 3, 4])
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


@pytest.mark.parametrize('algorithm', ALGORITHMS)
def test_empty_list(algorithm):
    """An empty list is a ValueError naming the function."""
    with pytest.raises(ValueError, match=algorithm.__name__):
        algorithm([])


def test_shape_mismatch():
    """Arrays of different shapes are refused, naming both shapes."""
    with pytest.raises(ValueError, match=r'data\[1\] has shape \(3,\)'):
        dp.allreduce([np.ones(2), np.ones(3, ctx=mx.cpu(1))])


def test_dtype_mismatch():
    """Arrays of different dtypes are a TypeError."""
    with pytest.raises(TypeError, match='float64'):
        dp.allreduce([np.ones(2, dtype='float32'),
                      np.ones(2, dtype='float64')])


def test_not_mxnet_arrays():
    """numpy arrays (not mxnet.np) are a TypeError saying what to use."""
    with pytest.raises(TypeError, match='mxnet.numpy.ndarray'):
        dp.allreduce([onp.ones(2), onp.ones(2)])


# The communication chapter's whole ladder under one contract: naive,
# sharded, ring, MXNet's kvstore ('device', 'local') and the bucketed
# (flattened) variant, for k = 1..5 and sizes around k and beyond.
LADDER = {
    'naive': dp.allreduce,
    'sharded': dp.sharded_allreduce,
    'ring': dp.ring_allreduce,
    'kvstore device': lambda data: dp.kvstore_allreduce(data, 'device'),
    'kvstore local': lambda data: dp.kvstore_allreduce(data, 'local'),
    # One bucket per device holding this one array, reduced by the ring.
    'bucketed ring': lambda data: dp.bucketed_allreduce(
        [[a] for a in data], dp.ring_allreduce),
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
        data = [np.array(v, ctx=mx.cpu(i), dtype=dtype)
                for i, v in enumerate(values)]
        LADDER[name](data)
        want = onp.sum([v.astype('float64') for v in values], axis=0)
        for i, a in enumerate(data):
            assert a.ctx == mx.cpu(i) and a.dtype == onp.dtype(dtype)
            assert_allclose(a.asnumpy(), want, rtol=RTOL[dtype],
                            atol=RTOL[dtype], err_msg=f'size {size}')
            assert_array_equal(a.asnumpy(), data[0].asnumpy(),
                               err_msg=f'device {i} differs, size {size}')
