"""Summing gradients across devices (allreduce), in PyTorch."""

import torch

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
        See :func:`check_allreduce_input`.

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
