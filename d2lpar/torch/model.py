"""The chapter's LeNet in PyTorch, a plain function of its parameters.

The same 8 arrays as :mod:`d2lpar.model`, drawn the same way, so that a
seed gives the same values in both frameworks, and the same layers, so
that the same values give the same logits (to float32 rounding).
"""

import numpy as onp
import torch
import torch.nn.functional as F

# (name, shape) of the 8 arrays, in the order lenet() reads them; the
# same as d2lpar.LENET_SHAPES (tests/test_torch_model.py compares).
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
    """Make LeNet's 8 parameter tensors, reproducibly.

    Taught in :doc:`/book/toy-network`. Weights are drawn from
    N(0, scale^2), biases are zero, as in d2l. The values come from
    NumPy's generator seeded with ``seed``, drawn in the same order as
    :func:`d2lpar.init_lenet_params`, then rounded to float32 as it does:
    the same seed gives the same values, bit for bit, in both
    frameworks.

    Parameters
    ----------
    seed : int, optional
        Seed of a private NumPy generator (PyTorch's global random state
        is neither read nor changed).
    scale : float, optional
        Standard deviation of the weights.

    Returns
    -------
    list of torch.Tensor
        ``[W1, b1, W2, b2, W3, b3, W4, b4]`` on the CPU, float32, with the
        shapes in ``LENET_SHAPES``; they do not require gradients (see
        :func:`d2lpar.torch.get_params`).

    Examples
    --------
    >>> params = init_lenet_params(seed=0)
    >>> [tuple(p.shape) for p in params][:2]
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
        params.append(torch.from_numpy(values.astype(onp.float32)))
    return params


def lenet(X, params):
    """Compute LeNet's logits for a batch of 28x28 grey images.

    Taught in :doc:`/book/toy-network`. Two 3x3 and 5x5 convolutions,
    each followed by ReLU and 2x2 average pooling, then two dense layers
    ``h @ W + b`` (``W`` stored inputs x outputs, as in the chapter).

    Parameters
    ----------
    X : torch.Tensor, shape (batch, 1, 28, 28)
        Images, on the device of ``params``.
    params : list of 8 torch.Tensor
        As made by :func:`init_lenet_params`.

    Returns
    -------
    torch.Tensor, shape (batch, 10)
        Unnormalised class scores.

    Raises
    ------
    ValueError
        If ``params`` does not hold 8 tensors or ``X`` is not a batch of
        1x28x28 images.
    """
    if len(params) != len(LENET_SHAPES):
        raise ValueError(
            f'lenet: expected {len(LENET_SHAPES)} parameter arrays, got '
            f'{len(params)}; use init_lenet_params()'
        )
    if X.ndim != 4 or tuple(X.shape[1:]) != (1, 28, 28):
        raise ValueError(
            f'lenet: X must have shape (batch, 1, 28, 28), got '
            f'{tuple(X.shape)}'
        )
    W1, b1, W2, b2, W3, b3, W4, b4 = params
    h = F.conv2d(X, W1, b1)  # (batch, 20, 26, 26)
    h = F.avg_pool2d(F.relu(h), kernel_size=2, stride=2)  # (b, 20, 13, 13)
    h = F.conv2d(h, W2, b2)  # (batch, 50, 9, 9)
    h = F.avg_pool2d(F.relu(h), kernel_size=2, stride=2)  # (b, 50, 4, 4)
    h = h.reshape(h.shape[0], -1)  # (batch, 800)
    h = F.relu(h @ W3 + b3)  # (batch, 128)
    return h @ W4 + b4  # (batch, 10)


def get_params(params, device):
    """Copy ``params`` to ``device`` as tensors that require gradients.

    Taught in :doc:`/book/toy-network`. The twin of
    :func:`d2lpar.get_params`: each device gets its own replica (a copy,
    even on the CPU, where every "device" is the one CPU), with a zero
    gradient buffer, as MXNet's ``attach_grad`` gives.

    Parameters
    ----------
    params : list of torch.Tensor
        The model's parameters, on any device.
    device : torch.device
        Where the copies should live.

    Returns
    -------
    list of torch.Tensor
        New leaf tensors on ``device`` with ``requires_grad`` set and
        ``.grad`` zero.

    Raises
    ------
    TypeError
        If ``device`` is not a ``torch.device`` or a parameter is not a
        tensor.
    ValueError
        If it is a GPU this PyTorch cannot use.

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> new_params = dp.get_params(dp.init_lenet_params(), dp.devices(1)[0])
    >>> new_params[1].grad.sum().item()
    0.0
    """
    from .checks import check_device, describe

    check_device(device, 'get_params')
    copies = []
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            raise TypeError(
                f'get_params: params[{i}] is a {describe(p)}, not a '
                f'torch.Tensor; use init_lenet_params() or '
                f'torch.as_tensor'
            )
        copy = p.detach().to(device, copy=True).requires_grad_()
        copy.grad = torch.zeros_like(copy)
        copies.append(copy)
    return copies
