"""Summing gradients across devices (allreduce), in PyTorch.

The naive :func:`allreduce`, the runner of an allreduce written as a
schedule (:func:`run_schedule`, the schedules are the library's own,
framework-neutral :mod:`d2lpar.comm.schedules`), the sharded allreduce
of d2l's exercise (:func:`sharded_allreduce`) and :func:`flat_view`,
which the homework's sharded allreduce writes its chunks through.
"""

import torch

from ..comm.schedules import sharded_schedule
from ..splitting import shard_ranges
from .checks import describe


def check_allreduce_input(data, where):
    """Raise unless ``data`` is a non-empty list of same-shape, same-dtype
    tensors.

    Raises
    ------
    TypeError
        If an entry is not a ``torch.Tensor``, or dtypes differ.
    ValueError
        If ``data`` is empty or not a list, or the shapes differ.
    """
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError(
            f'{where}: expected a non-empty list of tensors (one per '
            f'device), got {data!r}'
        )
    for i, a in enumerate(data):
        if not isinstance(a, torch.Tensor):
            raise TypeError(
                f'{where}: data[{i}] is a {describe(a)}, not a '
                f'torch.Tensor; create tensors with torch'
            )
    first = data[0]
    for i, a in enumerate(data[1:], start=1):
        if a.shape != first.shape:
            raise ValueError(
                f'{where}: data[{i}] has shape {tuple(a.shape)} but '
                f'data[0] has {tuple(first.shape)}; every device must '
                f'hold the same parameter'
            )
        if a.dtype != first.dtype:
            raise TypeError(
                f'{where}: data[{i}] is {a.dtype} but data[0] is '
                f'{first.dtype}; cast them to one dtype'
            )


def allreduce(data):
    """Sum tensors living on different devices, in place.

    Taught in :doc:`/book/allreduce`. The twin of :func:`d2lpar.allreduce`,
    the naive algorithm: copy every tensor to the first device, add there,
    then copy the sum back to every other device.

    Parameters
    ----------
    data : list of torch.Tensor
        Same shape and dtype, typically one per device.

    Returns
    -------
    None
        Every ``data[i]`` (the same tensor object) now holds the
        elementwise sum of all inputs.

    Raises
    ------
    TypeError, ValueError
        See :func:`~d2lpar.torch.collectives.check_allreduce_input`.

    Notes
    -----
    **The allreduce contract**, as in :func:`d2lpar.allreduce`: an
    ``algorithm(data) -> None`` that ``train_batch(algorithm=...)``
    accepts must (1) write in place, so that afterwards every
    ``data[i]``, the caller's tensor, holds the sum (``data[i].copy_(s)``
    or ``data[i] += ...``; rebinding ``data[i] = ...`` or returning a new
    tensor leaves the caller's gradients unchanged); (2) return None;
    (3) keep each tensor's dtype, shape and device.
    ``d2lpar.torch.check_allreduce(fn)`` checks a function against it.

    Examples
    --------
    >>> import torch
    >>> data = [torch.ones(2), 2 * torch.ones(2)]
    >>> allreduce(data)
    >>> data[1]
    tensor([3., 3.])
    """
    check_allreduce_input(data, 'allreduce')
    with torch.no_grad():  # gradients are summed, not differentiated
        for i in range(1, len(data)):
            data[0] += data[i].to(data[0].device)
        for i in range(1, len(data)):
            data[i].copy_(data[0])


def flat_view(a):
    """A 1-D view of ``a`` that shares its memory.

    The twin of :func:`d2lpar.flat_view`: writing to a slice of the
    result writes to ``a`` (PyTorch's ``view(-1)``; ``reshape`` would
    silently copy a tensor that is not contiguous).

    Parameters
    ----------
    a : torch.Tensor
        A contiguous tensor (every tensor ``torch`` creates, and every
        gradient, is).

    Returns
    -------
    torch.Tensor
        Shape ``(a.numel(),)``; writing to it writes to ``a``.

    Raises
    ------
    TypeError
        If ``a`` is not a tensor.
    ValueError
        If ``a`` is not contiguous (no 1-D view of it exists).

    Examples
    --------
    >>> import torch
    >>> a = torch.zeros(2, 3)
    >>> flat_view(a)[4:] = 1
    >>> a
    tensor([[0., 0., 0.],
            [0., 1., 1.]])
    """
    if not isinstance(a, torch.Tensor):
        raise TypeError(
            f'flat_view: expected a torch.Tensor, got a {describe(a)}'
        )
    if not a.is_contiguous():
        raise ValueError(
            f'flat_view: a tensor of shape {tuple(a.shape)} and strides '
            f'{a.stride()} is not contiguous, so no 1-D view shares its '
            f'memory; pass a.contiguous() and copy the result back'
        )
    return a.view(-1)


def run_schedule(data, schedule):
    """Run an allreduce schedule on tensors, one per device, in place.

    Taught in :doc:`/book/allreduce-algorithms`. The twin of
    :func:`d2lpar.run_schedule`: each :class:`~d2lpar.comm.Transfer` of
    a step copies a chunk (``chunk`` of :func:`d2lpar.shard_ranges`'
    ``k`` chunks), or the whole tensor (``chunk=None``), from ``src`` to
    ``dst``, which adds it to its own (``reduce=True``) or is
    overwritten by it; the additions of a step are all received before
    any is added.

    Parameters
    ----------
    data : list of torch.Tensor
        Same shape and dtype, one per device, contiguous; changed in
        place.
    schedule : list of list of d2lpar.comm.Transfer
        The steps, as :func:`d2lpar.comm.ring_schedule` returns them.

    Returns
    -------
    None

    Examples
    --------
    >>> import torch
    >>> from d2lpar.comm import ring_schedule
    >>> data = [torch.ones(5), 2 * torch.ones(5)]
    >>> run_schedule(data, ring_schedule(2))
    >>> data[0]
    tensor([3., 3., 3., 3., 3.])
    """
    check_allreduce_input(data, 'run_schedule')
    flats = [flat_view(a) for a in data]
    n = flats[0].numel()
    bounds = [slice(a, b) for a, b in shard_ranges(n, len(data))]
    with torch.no_grad():
        for step in schedule:
            received = []
            for t in step:
                part = slice(0, n) if t.chunk is None else bounds[t.chunk]
                if part.start == part.stop:
                    continue  # an empty chunk (fewer elements than devices)
                sent = flats[t.src][part].to(data[t.dst].device).clone()
                if t.reduce:
                    received.append((flats[t.dst][part], sent))
                else:
                    flats[t.dst][part].copy_(sent)
            for target, buffer in received:
                target += buffer


def sharded_allreduce(data):
    """Sum tensors on different devices, spreading the work over all.

    Taught in :doc:`/book/exercises`. The twin of
    :func:`d2lpar.sharded_allreduce`: device ``j`` owns the ``j``-th of
    ``k`` contiguous chunks; it gathers that chunk from every other
    device and adds it up (reduce-scatter), then sends the summed chunk
    back to all of them (all-gather); see
    :func:`d2lpar.comm.sharded_schedule`. Works for any ``k`` and any
    size, even fewer elements than devices (some chunks are then empty).

    Parameters
    ----------
    data : list of torch.Tensor
        Same shape and dtype, one per device, contiguous.

    Returns
    -------
    None
        Every ``data[i]`` (the same tensor object) now holds the
        elementwise sum of all inputs.

    Raises
    ------
    TypeError, ValueError
        See :func:`~d2lpar.torch.collectives.check_allreduce_input`.
    """
    check_allreduce_input(data, 'sharded_allreduce')
    run_schedule(data, sharded_schedule(len(data)))
