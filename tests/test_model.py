"""d2lpar.model: LeNet's parameters and forward pass."""

import numpy as onp
import pytest
from mxnet import gluon, np
from numpy.testing import assert_allclose

import d2lpar as dp


def test_param_shapes_and_biases():
    """8 float32 arrays with the chapter's shapes; biases start at zero."""
    params = dp.init_lenet_params()
    assert [p.shape for p in params] == [s for _, s in dp.LENET_SHAPES]
    assert all(p.dtype == onp.float32 for p in params)
    for p in params[1::2]:
        assert (p.asnumpy() == 0).all()


def test_init_reproducible_and_scaled():
    """Same seed, same values; another seed differs; std follows scale."""
    a, b = dp.init_lenet_params(3), dp.init_lenet_params(3)
    for p, q in zip(a, b):
        assert (p.asnumpy() == q.asnumpy()).all()
    c = dp.init_lenet_params(4)
    assert not (a[0].asnumpy() == c[0].asnumpy()).all()
    W3 = dp.init_lenet_params(0, scale=0.1)[4].asnumpy()
    assert_allclose(W3.std(), 0.1, rtol=0.02)  # 102,400 draws


def test_lenet_matches_gluon_reference():
    """lenet() equals the same network built from Gluon layers with the
    same weights (tolerance 1e-5): the architecture is the chapter's."""
    params = dp.init_lenet_params(0, scale=0.1)
    net = gluon.nn.Sequential()
    net.add(
        gluon.nn.Conv2D(20, 3, activation='relu'),
        gluon.nn.AvgPool2D(2, 2),
        gluon.nn.Conv2D(50, 5, activation='relu'),
        gluon.nn.AvgPool2D(2, 2),
        gluon.nn.Dense(128, activation='relu'),
        gluon.nn.Dense(10),
    )
    net.initialize()
    X = np.random.uniform(size=(5, 1, 28, 28))
    net(X)  # infer shapes
    layers = [net[0], net[2], net[4], net[5]]
    for i, layer in enumerate(layers):
        W, b = params[2 * i], params[2 * i + 1]
        # Dense stores (out, in); the chapter's matrices are (in, out).
        layer.weight.set_data(W.T if W.ndim == 2 else W)
        layer.bias.set_data(b)
    assert_allclose(
        dp.lenet(X, params).asnumpy(), net(X).asnumpy(), rtol=1e-5, atol=1e-6
    )


def test_lenet_output_shape():
    """Logits have shape (batch, 10)."""
    out = dp.lenet(np.zeros((3, 1, 28, 28)), dp.init_lenet_params())
    assert out.shape == (3, 10)


def test_lenet_bad_input():
    """Wrong parameter count or image shape is a clear ValueError."""
    params = dp.init_lenet_params()
    with pytest.raises(ValueError, match='expected 8 parameter arrays'):
        dp.lenet(np.zeros((1, 1, 28, 28)), params[:7])
    with pytest.raises(ValueError, match=r'\(batch, 1, 28, 28\)'):
        dp.lenet(np.zeros((1, 28, 28)), params)


def test_negative_scale():
    """A negative scale is refused."""
    with pytest.raises(ValueError, match='scale must be >= 0'):
        dp.init_lenet_params(scale=-1)
