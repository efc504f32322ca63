"""d2lpar.get_params: a replica per device, with gradients."""

import mxnet as mx
import pytest

import d2lpar as dp


def test_copies_live_on_device_with_zero_grads():
    """Copies are on the device, equal the originals, grads are zero."""
    params = dp.init_lenet_params(0, scale=0.1)
    copies = dp.get_params(params, mx.cpu(1))
    for p, c in zip(params, copies):
        assert c.ctx == mx.cpu(1)
        assert (c.asnumpy() == p.asnumpy()).all()
        assert c.grad.shape == c.shape and (c.grad.asnumpy() == 0).all()


def test_copies_are_independent():
    """Changing a replica leaves the original untouched."""
    params = dp.init_lenet_params(0, scale=0.1)
    copies = dp.get_params(params, mx.cpu(1))
    copies[0][:] = 7
    assert (params[0].asnumpy() != 7).all()


def test_bad_device():
    """A device that is not an mx.Context is a TypeError saying so."""
    with pytest.raises(TypeError, match='mx.Context'):
        dp.get_params(dp.init_lenet_params(), 'gpu0')
