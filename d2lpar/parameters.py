"""Copying a model's parameters onto a device."""

from .checks import check_device


def get_params(params, device):
    """Copy ``params`` to ``device`` and attach gradient buffers.

    Taught in :doc:`/book/toy-network`. Each device
    gets its own replica; the replicas stay equal because every device
    applies the same summed gradient (see :func:`train_batch`).

    Parameters
    ----------
    params : list of mxnet.numpy.ndarray
        The model's parameters, on any device.
    device : mxnet.Context
        Where the copies should live.

    Returns
    -------
    list of mxnet.numpy.ndarray
        New arrays on ``device`` with ``.grad`` attached (zero).

    Raises
    ------
    TypeError
        If ``device`` is not an ``mx.Context``.
    ValueError
        If it is a GPU this MXNet cannot use (a CPU build, or too few
        GPUs).

    Examples
    --------
    >>> import d2lpar as dp
    >>> new_params = dp.get_params(dp.init_lenet_params(), dp.devices(1)[0])
    >>> new_params[1].grad.sum().item()
    0.0
    """
    check_device(device, 'get_params')
    new_params = [p.copyto(device) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params
