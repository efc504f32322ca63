"""d2lpar.model: LeNet's parameters and forward pass."""

import numpy as onp
import pytest
from mxnet import autograd, gluon, np, npx
from numpy.testing import assert_allclose

import d2lpar as dp
from d2lpar.model import dense, relu


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


def _lenet_with_np_dot(X, params):
    """lenet as it was written before: its dense layers with np.dot."""
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h = npx.convolution(
        data=X, weight=W1, bias=b1, kernel=(3, 3), num_filter=20
    )
    h = npx.pooling(npx.relu(h), pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h = npx.convolution(
        data=h, weight=W2, bias=b2, kernel=(5, 5), num_filter=50
    )
    h = npx.pooling(npx.relu(h), pool_type='avg', kernel=(2, 2), stride=(2, 2))
    h = npx.relu(np.dot(h.reshape(h.shape[0], -1), W3) + b3)
    return np.dot(h, W4) + b4


def _logits_and_grads(net, X, params):
    """net's logits and the gradients of a loss w.r.t. params and X."""
    params = [p.copy() for p in params]
    X = X.copy()
    for p in params + [X]:
        p.attach_grad()
    weights = np.arange(10, dtype='float32') - 4.5  # every logit counts
    with autograd.record():
        out = net(X, params)
        loss = (npx.relu(out) * weights).sum() + (out * out).sum()
    loss.backward()
    return out.asnumpy(), [p.grad.asnumpy() for p in params + [X]]


def test_lenet_equals_np_dot_version_values_and_gradients():
    """lenet's dense layers (oneDNN's fully-connected operator on the
    transposed weights) compute what np.dot computes: the same logits
    and the same gradients for every parameter and the input, to
    float32 rounding."""
    params = dp.init_lenet_params(seed=1, scale=0.1)
    rng = onp.random.default_rng(1)
    X = np.array(rng.uniform(size=(6, 1, 28, 28)), dtype='float32')
    out, grads = _logits_and_grads(dp.lenet, X, params)
    ref_out, ref_grads = _logits_and_grads(_lenet_with_np_dot, X, params)
    assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    for g, ref in zip(grads, ref_grads):
        assert abs(ref).max() > 1e-3  # the check compares something
        assert_allclose(g, ref, rtol=1e-4, atol=1e-5 * abs(ref).max())


def test_dense_equals_matrix_product():
    """dense(X, W, b) is X W + b, values and gradients, on a (batch,
    n_in) input with a (n_in, n_out) weight as the chapter stores it."""
    rng = onp.random.default_rng(2)
    X, W, b = (
        np.array(rng.normal(size=shape), dtype='float32')
        for shape in ((5, 7), (7, 3), (3,))
    )
    for p in (X, W, b):
        p.attach_grad()
    with autograd.record():
        loss = (dense(X, W, b) ** 2).sum()
    loss.backward()
    x, w, bb = X.asnumpy(), W.asnumpy(), b.asnumpy()
    out = x @ w + bb
    assert_allclose(dense(X, W, b).asnumpy(), out, rtol=1e-5, atol=1e-5)
    assert_allclose(X.grad.asnumpy(), 2 * out @ w.T, rtol=1e-4, atol=1e-5)
    assert_allclose(W.grad.asnumpy(), 2 * x.T @ out, rtol=1e-4, atol=1e-5)
    assert_allclose(b.grad.asnumpy(), 2 * out.sum(0), rtol=1e-4, atol=1e-5)


def test_dense_without_bias_equals_matrix_product():
    """dense(X, W) is X W, values and gradients (BatchNorm's layer)."""
    rng = onp.random.default_rng(3)
    X, W = (
        np.array(rng.normal(size=shape), dtype='float32')
        for shape in ((4, 6), (6, 5))
    )
    for p in (X, W):
        p.attach_grad()
    with autograd.record():
        loss = (dense(X, W) ** 2).sum()
    loss.backward()
    x, w = X.asnumpy(), W.asnumpy()
    out = x @ w
    assert_allclose(dense(X, W).asnumpy(), out, rtol=1e-5, atol=1e-5)
    assert_allclose(X.grad.asnumpy(), 2 * out @ w.T, rtol=1e-4, atol=1e-5)
    assert_allclose(W.grad.asnumpy(), 2 * x.T @ out, rtol=1e-4, atol=1e-5)


def test_relu_equals_npx_relu_values_and_gradients():
    """The library's oneDNN ReLU gives npx.relu's values and gradients,
    zeros included (inputs on both sides of 0 and at 0 exactly)."""
    x = np.array(onp.random.default_rng(0).normal(size=(4, 20, 26, 26)))
    x[0, 0, 0, :3] = 0.0
    weights = np.array(onp.random.default_rng(1).normal(size=x.shape))
    grads, values = [], []
    for fn in (relu, npx.relu):
        x.attach_grad()
        with autograd.record():
            out = fn(x)
            loss = (out * weights).sum()
        loss.backward()
        values.append(out.asnumpy())
        grads.append(x.grad.asnumpy())
    assert (values[0] == values[1]).all()
    assert (grads[0] == grads[1]).all()
    assert (values[0] > 0).any() and (values[0] == 0).any()
