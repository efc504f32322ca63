"""d2lpar.collectives: the first part's allreduce leaves every device the
sum, and refuses what is not one same-shape array per device (every
other algorithm: test_comm_algorithms.py)."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose

import d2lpar as dp


@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
@pytest.mark.parametrize('shape', [(1,), (2,), (7,), (3, 5), (2, 3, 4, 5)])
def test_every_array_holds_the_sum(k, shape):
    """After the allreduce each of k arrays equals the plain numpy sum
    (rtol 1e-6) and stays on its own device, also for arrays with fewer
    elements than devices or a size not divisible by k."""
    rng = onp.random.default_rng(k * 100 + len(shape))
    values = [rng.normal(size=shape).astype('float32') for _ in range(k)]
    data = [np.array(v, ctx=mx.cpu(i)) for i, v in enumerate(values)]
    dp.allreduce(data)
    expected = onp.sum(values, axis=0)
    for i, a in enumerate(data):
        assert a.ctx == mx.cpu(i)
        assert_allclose(a.asnumpy(), expected, rtol=1e-6, atol=1e-6)


def test_empty_list():
    """An empty list is a ValueError naming the function."""
    with pytest.raises(ValueError, match='allreduce'):
        dp.allreduce([])


def test_shape_mismatch():
    """Arrays of different shapes are refused, naming both shapes."""
    with pytest.raises(ValueError, match=r'data\[1\] has shape \(3,\)'):
        dp.allreduce([np.ones(2), np.ones(3, ctx=mx.cpu(1))])


def test_dtype_mismatch():
    """Arrays of different dtypes are a TypeError."""
    with pytest.raises(TypeError, match='float64'):
        dp.allreduce(
            [np.ones(2, dtype='float32'), np.ones(2, dtype='float64')]
        )


def test_not_mxnet_arrays():
    """numpy arrays (not mxnet.np) are a TypeError saying what to use."""
    with pytest.raises(TypeError, match='mxnet.numpy.ndarray'):
        dp.allreduce([onp.ones(2), onp.ones(2)])
