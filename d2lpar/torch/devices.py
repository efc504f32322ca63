"""Which devices to train on: GPUs when PyTorch sees enough, else CPUs.

What k CPU "devices" mean in one PyTorch process
------------------------------------------------
PyTorch has one CPU device: ``torch.device('cpu', 1)`` names the same
memory and the same cores as ``torch.device('cpu', 0)``, and a tensor
sent to either reports ``cpu``. :func:`devices` still returns ``k``
distinct CPU devices, ``cpu:0 .. cpu:k-1``, as labels: each gets its own
replica of the parameters (:func:`d2lpar.torch.get_params` copies) and
its own shard of every batch, and the allreduce sums their gradients, so
the algorithm the chapters teach runs unchanged and its result is the
same as on ``k`` GPUs. The devices take turns: one process runs one
device's forward and backward after the other's, each on every core
(PyTorch's operators use all cores), so ``k`` CPU devices take about as
long per step as one. To see the devices really work side by side on a
CPU, run them as processes: ``python -m d2lpar launch --engine torch
--workers k -- python -m d2lpar worker --engine torch``.
"""

import os
import warnings

import torch

from ..validation import gpu_count

ENV_VAR = 'D2LPAR_DEVICES'


def same_place(a, b):
    """Whether tensors on ``a`` and on ``b`` share memory: the same GPU,
    or both on the CPU (every CPU "device" is the one CPU)."""
    if a.type == 'cpu' or b.type == 'cpu':
        return a.type == b.type
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def _wanted_kind():
    kind = os.environ.get(ENV_VAR, '').strip().lower()
    if kind not in ('', 'cpu', 'gpu'):
        raise ValueError(
            f'devices: {ENV_VAR}={kind!r} is not understood; set it to '
            f'"cpu" or "gpu", or unset it to let d2lpar choose'
        )
    return kind


def devices(n=None):
    """Return ``n`` distinct devices: CUDA GPUs if enough, else CPUs.

    Taught in :doc:`/book/toy-network`. The PyTorch twin of
    :func:`d2lpar.devices`.

    Parameters
    ----------
    n : int, optional
        How many devices. By default all GPUs, or one device when there
        is no GPU.

    Returns
    -------
    list of torch.device
        ``[cuda:0, ..., cuda:n-1]`` when PyTorch sees at least ``n`` GPUs;
        else, for one device, Apple's ``mps`` where present; else
        ``[cpu:0, ..., cpu:n-1]``, which are labels of the one CPU (see
        the module's documentation: the devices take turns). Never the
        same device twice. ``D2LPAR_DEVICES=cpu`` or ``=gpu`` forces the
        kind.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not a positive int, if ``D2LPAR_DEVICES=gpu`` and
        more GPUs are asked for than PyTorch sees, or
        ``D2LPAR_DEVICES`` has an unknown value.
    RuntimeError
        If ``D2LPAR_DEVICES=gpu`` but PyTorch sees no GPU.

    Warns
    -----
    UserWarning
        When more devices are asked for than PyTorch sees GPUs (and it
        sees at least one): ``n`` CPU devices are returned instead.

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> dp.devices(2)  # on a machine without GPUs
    [device(type='cpu', index=0), device(type='cpu', index=1)]
    """
    from .checks import check_positive

    if n is not None:
        check_positive('n', n, 'devices', integer=True)
    kind = _wanted_kind()
    num_gpus = torch.cuda.device_count() if kind != 'cpu' else 0
    if kind == 'gpu' and num_gpus == 0:
        raise RuntimeError(
            f'devices: {ENV_VAR}=gpu but PyTorch sees no GPU; install '
            f"PyTorch's CUDA build (pytorch.org/get-started) or set {ENV_VAR}=cpu"
        )
    if num_gpus and (n is None or n <= num_gpus):
        return [torch.device('cuda', i) for i in range(n or num_gpus)]
    if num_gpus:
        if kind == 'gpu':
            raise ValueError(
                f'devices: asked for {n} GPUs but PyTorch sees only '
                f'{num_gpus}; ask for at most {num_gpus}, or unset '
                f'{ENV_VAR} to fall back to {n} CPU devices'
            )
        warnings.warn(
            f'devices: {n} devices asked for but PyTorch sees '
            f'{gpu_count(num_gpus)}; using {n} CPU devices instead (set '
            f'{ENV_VAR}=gpu to make this an error)',
            stacklevel=2,
        )
    elif (n or 1) == 1 and kind != 'cpu' and _mps_available():
        return [torch.device('mps')]
    return [torch.device('cpu', i) for i in range(n or 1)]


def _mps_available():
    mps = getattr(torch.backends, 'mps', None)
    return bool(mps and mps.is_available())
