"""MXNet's own allreduce: the kvstore, the production baseline."""

import mxnet as mx
from mxnet import np

from ..collectives import check_allreduce_input

# One store per kind, reused across calls: creating a kvstore and
# initialising its keys costs far more than a small allreduce, and a
# training loop keeps one store for its whole run too. A key holds merge
# buffers for its shape and MXNet cannot drop one key, so a store that
# reaches MAX_KEYS keys is replaced by a fresh one, which frees them all.
MAX_KEYS = 64
_STORES = {}


def _store(kind, shape, dtype, devices):
    # A key's merge buffers are laid out for the devices of its first
    # pushpull; reusing it with other devices crashes MXNet (seen: a
    # segfault going from 2 to 3 devices), so the devices are in the key.
    key = f'{shape}-{dtype}-{devices}'
    kv, keys = _STORES.get(kind, (None, set()))
    if kv is None or (key not in keys and len(keys) >= MAX_KEYS):
        kv, keys = _STORES[kind] = (mx.kv.create(kind), set())
    if key not in keys:
        kv.init(key, np.zeros(shape, dtype=dtype))
        keys.add(key)
    return kv, key


def kvstore_allreduce(data, kind='device'):
    """Sum arrays on different devices with MXNet's kvstore, in place.

    Taught in :doc:`/book/measuring`, as the baseline the
    hand-written algorithms are measured against. ``'device'`` sums on
    the devices themselves (on GPUs, over their links); ``'local'`` sums
    on the CPU.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        Same shape and dtype, typically one per device.
    kind : {'device', 'local'}, optional
        The kvstore type.

    Returns
    -------
    None
        Every ``data[i]`` now holds the elementwise sum of all inputs.

    Raises
    ------
    ValueError
        If ``kind`` is not ``'device'`` or ``'local'``.
    TypeError, ValueError
        See :func:`~d2lpar.collectives.check_allreduce_input`.
    """
    check_allreduce_input(data, 'kvstore_allreduce')
    if kind not in ('device', 'local'):
        raise ValueError(
            f"kvstore_allreduce: kind must be 'device' or "
            f"'local', got {kind!r}; the dist_* kinds need "
            f'several processes (see the engines chapter)'
        )
    kv, key = _store(kind, data[0].shape, data[0].dtype, [a.ctx for a in data])
    kv.pushpull(key, list(data), out=list(data))
