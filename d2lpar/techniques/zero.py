"""Sharding the optimizer state across devices (ZeRO stage 1).

An allreduce is a reduce-scatter followed by an all-gather. ZeRO
(Rajbhandari et al., 2020) stops after the reduce-scatter: device ``j``
then holds the summed gradient of its ``1/k`` chunk of the parameters
only, updates that chunk with the optimizer state of that chunk only,
and an all-gather sends the updated parameters to everyone. The bytes
moved are those of one allreduce; the optimizer state per device shrinks
by ``k``.

All parameters are treated as one flat vector, cut into ``k`` contiguous
chunks (sizes from :func:`d2lpar.shard_sizes`), as the schedules do.
"""

from mxnet import np

from ..checks import check_devices
from ..comm.algorithms import flat_view, run_schedule
from ..comm.schedules import all_gather_schedule, reduce_scatter_schedule
from ..model import lenet
from ..splitting import shard_ranges, split_batch
from ..training import cores_per_device, cross_entropy, device_gradients


def pack(arrays):
    """Copy ``arrays`` (all on one device) into one flat buffer.

    Parameters
    ----------
    arrays : list of mxnet.numpy.ndarray

    Returns
    -------
    mxnet.numpy.ndarray
        1-D, ``sum(a.size)`` elements, on the arrays' device.
    """
    return np.concatenate([flat_view(a) for a in arrays])


def unpack(buffer, arrays):
    """Copy a flat ``buffer`` back into ``arrays``, in order, in place.

    Parameters
    ----------
    buffer : mxnet.numpy.ndarray
        As made by :func:`pack` from arrays of these shapes.
    arrays : list of mxnet.numpy.ndarray
        Overwritten.
    """
    flat, start = buffer.as_nd_ndarray(), 0
    for a in arrays:
        flat[start : start + a.size].copyto(a.as_nd_ndarray().reshape((-1,)))
        start += a.size


def _chunk(buffer, bounds):
    # A view: writing to it writes into buffer (legacy slices share memory)
    start, stop = bounds
    return buffer.as_nd_ndarray()[start:stop].as_np_ndarray()


def init_zero_states(optimizer, device_params):
    """Optimizer state for each device's chunk of the parameters only.

    Taught in :doc:`/book/zero`.

    Parameters
    ----------
    optimizer : d2lpar.SGD, d2lpar.Momentum or d2lpar.Adam
    device_params : list of list of mxnet.numpy.ndarray
        One replica per device.

    Returns
    -------
    list of list of dict
        ``states[j]`` is ``[state]``: one optimizer state for device
        ``j``'s chunk of the flat parameter vector (about ``1/k`` of the
        model), on device ``j``. :func:`d2lpar.state_bytes` measures it.
    """
    k = len(device_params)
    n = sum(p.size for p in device_params[0])
    states = []
    for params, bounds in zip(device_params, shard_ranges(n, k)):
        shard = _chunk(pack(params), bounds)
        states.append([optimizer.init_state(shard)])
    return states


@cores_per_device
def train_batch(
    X,
    y,
    device_params,
    zero_states,
    devices,
    optimizer,
    net=lenet,
    loss=cross_entropy,
):
    """One data-parallel step with the optimizer state sharded (ZeRO-1).

    Taught in :doc:`/book/zero`. Backward on
    every device; a ring reduce-scatter of the packed gradients leaves
    device ``j`` with the summed gradient of chunk ``j``; device ``j``
    updates chunk ``j`` of its parameters with the state of chunk ``j``;
    a ring all-gather of the packed parameters gives every device all
    updated chunks. Equals :func:`d2lpar.optim.train_batch` up to float
    rounding, and keeps the replicas bit-identical.

    Parameters
    ----------
    X, y : mxnet.numpy.ndarray
        The minibatch; ``len(X) >= len(devices)``.
    device_params : list of list of mxnet.numpy.ndarray
        Replicas with gradients attached (:func:`d2lpar.get_params`).
    zero_states : list of list of dict
        From :func:`d2lpar.init_zero_states`; updated in place.
    devices : list of mxnet.Context
    optimizer : d2lpar.SGD, d2lpar.Momentum or d2lpar.Adam
    net, loss : callable, optional
        LeNet and softmax cross-entropy by default.

    Raises
    ------
    ValueError
        If replicas, states and devices are not one per device.
    """
    check_devices(devices, 'zero.train_batch')
    k = len(devices)
    if not len(device_params) == len(zero_states) == k:
        raise ValueError(
            f'zero.train_batch: {len(device_params)} '
            f'replicas, {len(zero_states)} states and {k} '
            f'devices; make one of each per device '
            f'(init_zero_states(optimizer, device_params))'
        )
    X_shards, y_shards = split_batch(X, y, devices)
    device_gradients(X_shards, y_shards, device_params, net, loss)
    grads = [[p.grad for p in params] for params in device_params]
    grad_bufs = [pack(g) for g in grads]  # (n,) on each device
    run_schedule(grad_bufs, reduce_scatter_schedule(k))
    param_bufs = [pack(params) for params in device_params]
    bounds = shard_ranges(grad_bufs[0].size, k)
    for j in range(k):  # device j: only chunk j, only its state
        if bounds[j][0] == bounds[j][1]:
            continue  # fewer elements than devices: nothing to own
        g = _chunk(grad_bufs[j], bounds[j]) / X.shape[0]
        optimizer.update(
            _chunk(param_bufs[j], bounds[j]), g, zero_states[j][0]
        )
    run_schedule(param_bufs, all_gather_schedule(k))
    for params, buffer in zip(device_params, param_bufs):
        unpack(buffer, params)
