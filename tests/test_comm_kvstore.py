"""d2lpar.kvstore_allreduce: MXNet's kvstore under the same contract."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose

import d2lpar as dp


@pytest.mark.parametrize('kind', ['device', 'local'])
@pytest.mark.parametrize('k', [1, 2, 3, 2, 4])  # 2 again: keys are reused
def test_every_array_holds_the_sum(kind, k):
    """Each array ends as the numpy sum (rtol 1e-6), on its own device,
    also when the same shape was reduced before on other devices."""
    rng = onp.random.default_rng(k)
    values = [rng.normal(size=(3, 5)).astype('float32') for _ in range(k)]
    data = [np.array(v, ctx=mx.cpu(i)) for i, v in enumerate(values)]
    dp.kvstore_allreduce(data, kind)
    for i, a in enumerate(data):
        assert a.ctx == mx.cpu(i)
        assert_allclose(
            a.asnumpy(), onp.sum(values, axis=0), rtol=1e-6, atol=1e-6
        )


def test_unknown_kind():
    """A kind other than device/local is refused with what to use."""
    with pytest.raises(ValueError, match="'device' or 'local'"):
        dp.kvstore_allreduce([np.ones(2)], 'dist_sync')


def test_bad_input_checked_first():
    """Shape mismatches are reported before MXNet sees them."""
    with pytest.raises(ValueError, match='kvstore_allreduce'):
        dp.kvstore_allreduce([np.ones(2), np.ones(3, ctx=mx.cpu(1))])


def test_store_is_replaced_before_it_outgrows_max_keys():
    """Reducing more shapes than MAX_KEYS never holds more than MAX_KEYS
    keys in one store (a fresh store replaces a full one), and every
    result is still the sum."""
    from d2lpar.comm import kvstore

    devices = [mx.cpu(0), mx.cpu(1)]
    for n in range(1, kvstore.MAX_KEYS + 10):
        data = [np.full(n, float(i + 1), ctx=d) for i, d in enumerate(devices)]
        dp.kvstore_allreduce(data)
        assert_allclose(data[1].asnumpy(), onp.full(n, 3.0))
        assert len(kvstore._STORES['device'][1]) <= kvstore.MAX_KEYS
