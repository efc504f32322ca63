"""Summing gradients across devices: the first part's allreduce.

:func:`allreduce` is the naive algorithm the first part teaches (copy to
the first device, add, copy back); its docstring states the contract
every algorithm must meet, and :func:`check_allreduce_input` checks the
arguments of every one of them. The algorithms of the later chapters
(sharded, ring, recursive doubling, schedules, the kvstore, buckets)
are in :mod:`d2lpar.comm`.
"""

from mxnet import np


def check_allreduce_input(data, where):
    """Raise unless ``data`` is a non-empty list of same-shape arrays.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        One array per device.
    where : str
        The public function doing the check, for the message.

    Raises
    ------
    TypeError
        If an entry is not an ``mxnet.numpy.ndarray``, or dtypes differ.
    ValueError
        If ``data`` is empty or not a list, or the shapes differ.
    """
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError(
            f'{where}: expected a non-empty list of arrays '
            f'(one per device), got {data!r}'
        )
    for i, a in enumerate(data):
        if not isinstance(a, np.ndarray):
            raise TypeError(
                f'{where}: data[{i}] is a {type(a).__name__}, '
                f'not an mxnet.numpy.ndarray; create arrays '
                f'with mxnet.np'
            )
    first = data[0]
    for i, a in enumerate(data[1:], start=1):
        if a.shape != first.shape:
            raise ValueError(
                f'{where}: data[{i}] has shape {a.shape} but '
                f'data[0] has {first.shape}; every device must '
                f'hold the same parameter'
            )
        if a.dtype != first.dtype:
            raise TypeError(
                f'{where}: data[{i}] is {a.dtype} but data[0] '
                f'is {first.dtype}; cast them to one dtype'
            )


def allreduce(data):
    """Sum arrays living on different devices, in place.

    Taught in :doc:`/book/allreduce`. The naive algorithm: copy every
    array to the first device, add there, then copy the sum back to every
    other device. The first device moves (k-1) arrays in and (k-1) out.

    Parameters
    ----------
    data : list of mxnet.numpy.ndarray
        Same shape and dtype, typically one per device.

    Returns
    -------
    None
        Every ``data[i]`` now holds the elementwise sum of all inputs.

    Raises
    ------
    TypeError, ValueError
        See :func:`~d2lpar.collectives.check_allreduce_input`.

    Notes
    -----
    **The allreduce contract.** Every algorithm that
    ``train_batch(algorithm=...)`` and ``train(algorithm=...)`` accept
    (this one, :func:`ring_allreduce`, :func:`sharded_allreduce`,
    :func:`d2lpar.kvstore_allreduce`, or yours) is a function
    ``algorithm(data) -> None`` where ``data`` is a list of ``k`` arrays
    of one shape and dtype, ``data[i]`` on the i-th device. It must

    1. write in place: afterwards every ``data[i]`` (the same array
       object) holds the elementwise sum of all ``k`` inputs; write with
       ``data[i][:] = ...``, since rebinding ``data[i]`` or returning a
       new array leaves the caller's gradients unchanged;
    2. return None;
    3. keep each array's dtype, shape and device.

    It may create any temporary arrays. ``d2lpar.check_allreduce(fn)``
    checks a function against this contract.

    Examples
    --------
    >>> import mxnet as mx
    >>> from mxnet import np
    >>> data = [np.ones(2, ctx=mx.cpu(0)), 2 * np.ones(2, ctx=mx.cpu(1))]
    >>> allreduce(data)
    >>> data[1], data[1].ctx
    (array([3., 3.]), cpu(1))
    """
    check_allreduce_input(data, 'allreduce')
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])
