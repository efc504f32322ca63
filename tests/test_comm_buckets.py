"""d2lpar.bucketed_allreduce: one buffer per device, same sums."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose

import d2lpar as dp
from d2lpar.comm import ALGORITHMS

SHAPES = [(20, 1, 3, 3), (20,), (3, 4), (1,)]


@pytest.mark.parametrize('name', ALGORITHMS)
@pytest.mark.parametrize('k', [1, 2, 3])
def test_each_array_holds_its_sum(name, k):
    """Every array of every device ends as the sum of its counterparts,
    keeps its shape and stays on its device (rtol 1e-6)."""
    rng = onp.random.default_rng(k)
    values = [
        [rng.normal(size=s).astype('float32') for s in SHAPES]
        for _ in range(k)
    ]
    arrays = [
        [np.array(v, ctx=mx.cpu(d)) for v in vs] for d, vs in enumerate(values)
    ]
    dp.bucketed_allreduce(arrays, ALGORITHMS[name])
    for d in range(k):
        for j, shape in enumerate(SHAPES):
            a = arrays[d][j]
            assert a.shape == shape and a.ctx == mx.cpu(d)
            want = sum(values[i][j] for i in range(k))
            assert_allclose(a.asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_mismatched_devices():
    """Devices holding different shapes are refused."""
    with pytest.raises(ValueError, match='same shapes'):
        dp.bucketed_allreduce([[np.ones(2)], [np.ones(3, ctx=mx.cpu(1))]])
