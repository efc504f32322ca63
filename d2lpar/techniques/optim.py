"""Optimizers with state (momentum, Adam) in the from-scratch step.

Plain SGD needs nothing but the parameters and their gradients. SGD with
momentum keeps one extra array per parameter (the velocity), Adam keeps
two (first and second moments). In data parallelism every replica keeps
its own copy of that state; the copies stay identical because every
replica applies the same update to the same summed gradient.

An optimizer here updates one array at a time, in place, through
``update(p, g, state)``: the same code then updates a whole parameter or
one shard of a flat buffer of parameters (:mod:`d2lpar.zero`).
"""

import numpy as onp
from mxnet import np

from ..checks import check_positive
from ..collectives import allreduce
from ..model import lenet
from ..splitting import split_batch
from ..training import (
    cores_per_device,
    cross_entropy,
    device_gradients,
    sum_gradients,
)


class SGD:
    """Plain minibatch SGD: ``p <- p - lr * g``; no state.

    Taught in :doc:`/book/optimizer-state`.

    Parameters
    ----------
    lr : float
        Learning rate (positive).
    """

    state_names = ()

    def __init__(self, lr):
        check_positive('lr', lr, type(self).__name__)
        self.lr = lr

    def init_state(self, p):
        """Fresh state for an array like ``p``: a dict of zero arrays.

        Parameters
        ----------
        p : mxnet.numpy.ndarray
            The parameter (or parameter shard) the state belongs to; the
            state lives on its device and has its shape.

        Returns
        -------
        dict
            ``{'t': 0}`` plus one zero array per name in
            ``state_names``.
        """
        state = {'t': 0}
        for name in self.state_names:
            state[name] = np.zeros(p.shape, dtype=p.dtype, ctx=p.ctx)
        return state

    def update(self, p, g, state):
        """Apply one step to ``p`` in place, given its mean gradient ``g``.

        Parameters
        ----------
        p : mxnet.numpy.ndarray
            Parameter (or a view of a shard of one), changed in place.
        g : mxnet.numpy.ndarray
            The gradient averaged over the batch, same shape as ``p``.
        state : dict
            From :meth:`init_state`; changed in place.
        """
        state['t'] += 1
        p[:] = p - self.lr * g


class Momentum(SGD):
    """SGD with momentum: ``v <- mu v + g``, ``p <- p - lr v``.

    The velocity ``v`` is one array per parameter, as large as it.

    Parameters
    ----------
    lr : float
        Learning rate (positive).
    momentum : float, optional
        ``mu`` in [0, 1).
    """

    state_names = ('v',)

    def __init__(self, lr, momentum=0.9):
        super().__init__(lr)
        if not 0 <= momentum < 1:
            raise ValueError(
                f'Momentum: momentum must be in [0, 1), got '
                f'{momentum}; 0.9 is the usual choice'
            )
        self.momentum = momentum

    def update(self, p, g, state):
        """See :meth:`SGD.update`."""
        state['t'] += 1
        v = state['v']
        v[:] = self.momentum * v + g
        p[:] = p - self.lr * v


class Adam(SGD):
    """Adam (Kingma and Ba, 2015) with bias correction.

    Keeps two arrays per parameter: the running means of the gradient
    (``m``) and of its square (``v``), each as large as the parameter.

    Parameters
    ----------
    lr : float
        Learning rate (positive).
    beta1, beta2 : float, optional
        Decay rates of ``m`` and ``v``, in [0, 1).
    eps : float, optional
        Added to the denominator for numerical safety.
    """

    state_names = ('m', 'v')

    def __init__(self, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(lr)
        for name, beta in (('beta1', beta1), ('beta2', beta2)):
            if not 0 <= beta < 1:
                raise ValueError(f'Adam: {name} must be in [0, 1), got {beta}')
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def update(self, p, g, state):
        """See :meth:`SGD.update`."""
        state['t'] += 1
        t, m, v = state['t'], state['m'], state['v']
        m[:] = self.beta1 * m + (1 - self.beta1) * g
        v[:] = self.beta2 * v + (1 - self.beta2) * g * g
        m_hat = m / (1 - self.beta1**t)
        v_hat = v / (1 - self.beta2**t)
        p[:] = p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def init_states(optimizer, device_params):
    """One optimizer state per parameter, on every device.

    Parameters
    ----------
    optimizer : SGD, Momentum or Adam
    device_params : list of list of mxnet.numpy.ndarray
        ``device_params[i]`` is the replica on device ``i``.

    Returns
    -------
    list of list of dict
        ``device_states[i][j]`` is parameter ``j``'s state on device
        ``i``, on the same device as the parameter.
    """
    return [
        [optimizer.init_state(p) for p in params] for params in device_params
    ]


def state_bytes(device_states):
    """Bytes of optimizer state held on each device.

    Counts the arrays actually allocated (``size * itemsize``), so a
    sharded state (:mod:`d2lpar.zero`) shows its smaller share.

    Parameters
    ----------
    device_states : list of list of dict
        As made by :func:`init_states` (or a sharded equivalent).

    Returns
    -------
    list of int
        Per device.
    """
    return [
        sum(
            a.size * onp.dtype(a.dtype).itemsize
            for state in states
            for a in state.values()
            if isinstance(a, np.ndarray)
        )
        for states in device_states
    ]


@cores_per_device
def train_batch(
    X,
    y,
    device_params,
    device_states,
    devices,
    optimizer,
    net=lenet,
    loss=cross_entropy,
    algorithm=allreduce,
):
    """One data-parallel step with a stateful optimizer on every replica.

    Taught in :doc:`/book/optimizer-state`. The gradients and their sum
    are :func:`d2lpar.train_batch`'s; then every device applies
    ``optimizer`` to its replica with its own copy of the optimizer
    state.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch; ``len(X) >= len(devices)``.
    device_params : list of list of mxnet.numpy.ndarray
        Replicas with gradients attached (:func:`d2lpar.get_params`).
    device_states : list of list of dict
        From :func:`d2lpar.init_states`; updated in place.
    devices : list of mxnet.Context
    optimizer : SGD, Momentum or Adam
    net, loss : callable, optional
        LeNet and softmax cross-entropy by default.
    algorithm : callable, optional
        The allreduce.

    Raises
    ------
    ValueError
        If replicas, states and devices are not one per device.
    """
    if not len(device_params) == len(device_states) == len(devices):
        raise ValueError(
            f'optim.train_batch: {len(device_params)} '
            f'replicas, {len(device_states)} states and '
            f'{len(devices)} devices; make one of each per '
            f'device (init_states(optimizer, device_params))'
        )
    X_shards, y_shards = split_batch(X, y, devices)
    device_gradients(X_shards, y_shards, device_params, net, loss)
    sum_gradients(device_params, algorithm)
    for params, states in zip(device_params, device_states):
        for p, state in zip(params, states):
            optimizer.update(p, p.grad / X.shape[0], state)
