"""The chapter's LeNet, written as a plain function of its parameters.

Keeping the parameters in a list (instead of a Gluon block) is what lets
the chapter copy them to each device by hand and sum their gradients
itself: nothing is hidden inside a framework object.
"""

import numpy as onp
from mxnet import np, npx

# (name, shape) of the 8 arrays, in the order lenet() reads them.
LENET_SHAPES = (
    ('W1', (20, 1, 3, 3)),
    ('b1', (20,)),
    ('W2', (50, 20, 5, 5)),
    ('b2', (50,)),
    ('W3', (800, 128)),
    ('b3', (128,)),
    ('W4', (128, 10)),
    ('b4', (10,)),
)


def init_lenet_params(seed=0, scale=0.01):
    """Make LeNet's 8 parameter arrays, reproducibly.

    Taught in :doc:`/book/toy-network`. Weights are
    drawn from N(0, scale^2), biases are zero, as in d2l.

    Parameters
    ----------
    seed : int, optional
        Seed of a private NumPy generator: the same seed gives the same
        values whatever else has used MXNet's global random state.
    scale : float, optional
        Standard deviation of the weights.

    Returns
    -------
    list of mxnet.numpy.ndarray
        ``[W1, b1, W2, b2, W3, b3, W4, b4]`` on ``cpu(0)``, float32, with
        the shapes in ``LENET_SHAPES``.

    Examples
    --------
    >>> params = init_lenet_params(seed=0)
    >>> [p.shape for p in params][:2]
    [(20, 1, 3, 3), (20,)]
    """
    if scale < 0:
        raise ValueError(f'init_lenet_params: scale must be >= 0, got {scale}')
    rng = onp.random.default_rng(seed)
    params = []
    for name, shape in LENET_SHAPES:
        values = (
            rng.normal(0, scale, shape)
            if name.startswith('W')
            else onp.zeros(shape)
        )
        params.append(np.array(values, dtype='float32'))
    return params


def lenet(X, params):
    """Compute LeNet's logits for a batch of 28x28 grey images.

    Taught in :doc:`/book/toy-network`. Its two dense layers compute
    ``np.dot(h, W) + b`` with :func:`~d2lpar.model.dense` (oneDNN's
    operator), so that several CPU devices may each run them
    on several cores at the same time; its ReLUs run on oneDNN too
    (:func:`~d2lpar.model.relu`).

    Parameters
    ----------
    X : mxnet.numpy.ndarray, shape (batch, 1, 28, 28)
        Images, on the same device as ``params``.
    params : list of 8 mxnet.numpy.ndarray
        As made by :func:`init_lenet_params`.

    Returns
    -------
    mxnet.numpy.ndarray, shape (batch, 10)
        Unnormalised class scores.

    Raises
    ------
    ValueError
        If ``params`` does not hold 8 arrays or ``X`` is not a batch of
        1x28x28 images.
    """
    if len(params) != len(LENET_SHAPES):
        raise ValueError(
            f'lenet: expected {len(LENET_SHAPES)} parameter '
            f'arrays, got {len(params)}; use '
            f'init_lenet_params()'
        )
    if X.ndim != 4 or X.shape[1:] != (1, 28, 28):
        raise ValueError(
            f'lenet: X must have shape (batch, 1, 28, 28), got {X.shape}'
        )
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h = npx.convolution(
        data=X, weight=W1, bias=b1, kernel=(3, 3), num_filter=20
    )  # (batch, 20, 26, 26)
    h = npx.pooling(
        relu(h), pool_type='avg', kernel=(2, 2), stride=(2, 2)
    )  # (batch, 20, 13, 13)
    h = npx.convolution(
        data=h, weight=W2, bias=b2, kernel=(5, 5), num_filter=50
    )  # (batch, 50, 9, 9)
    h = npx.pooling(
        relu(h), pool_type='avg', kernel=(2, 2), stride=(2, 2)
    )  # (batch, 50, 4, 4)
    h = h.reshape(h.shape[0], -1)  # (batch, 800)
    h = relu(dense(h, W3, b3))  # (batch, 128)
    return dense(h, W4, b4)  # (batch, 10)


def relu(X):
    """Compute ``max(X, 0)`` element by element, with oneDNN on CPUs.

    The same values and gradients as ``npx.relu``, computed by MXNet's
    ``Activation`` operator: on CPU contexts oneDNN's kernel.
    ``npx.relu`` runs MXNet's own element-wise kernel instead, which
    never uses more threads than MXNet's cap (half the logical CPUs on
    x86; :mod:`d2lpar.threads` says more);
    :func:`d2lpar.bench.compare_relu` times the two (see
    :doc:`the frameworks page </book/frameworks>`).

    Examples
    --------
    >>> relu(np.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return npx.activation(X, act_type='relu')


def dense(X, W, b=None):
    """Compute ``np.dot(X, W) + b`` with MXNet's fully-connected operator.

    The same values as the matrix product (to float32 rounding), and
    the same gradients, but computed by MXNet's ``FullyConnected``
    operator, forward and backward: on CPU contexts oneDNN's, instead of
    OpenBLAS's ``np.dot`` (on GPUs both run on cuBLAS).
    Two CPU devices that run OpenBLAS's multi-threaded product at the
    same time hang (the OpenMP build of OpenBLAS in MXNet's wheel shares
    its thread buffers between concurrent calls; the module docstring of
    ``d2lpar.threads`` says more); oneDNN's does not, so with this
    several devices may each use several cores.

    Parameters
    ----------
    X : mxnet.numpy.ndarray, shape (batch, n_in)
    W : mxnet.numpy.ndarray, shape (n_in, n_out)
        Stored (inputs, outputs) as in the chapter; the operator wants
        (outputs, inputs), so it is given ``W.T`` (a transposed copy,
        through which the gradient flows back to ``W``).
    b : mxnet.numpy.ndarray, shape (n_out,), optional
        The bias; None for a layer without one (``np.dot(X, W)``).

    Returns
    -------
    mxnet.numpy.ndarray, shape (batch, n_out)

    Examples
    --------
    >>> X, W, b = np.ones((2, 3)), np.ones((3, 4)), np.zeros(4)
    >>> dense(X, W, b).shape
    (2, 4)
    """
    if b is None:
        return npx.fully_connected(
            X, W.T, num_hidden=W.shape[1], no_bias=True, flatten=False
        )
    return npx.fully_connected(
        X, W.T, b, num_hidden=W.shape[1], no_bias=False, flatten=False
    )
