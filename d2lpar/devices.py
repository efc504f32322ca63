"""Which devices to train on: GPUs when MXNet sees them, else CPU contexts.

d2l's ``try_gpu(i)`` falls back to ``cpu()`` for every ``i`` beyond the
GPUs MXNet sees: without a GPU, "two devices" silently become one device
used twice; with one GPU they are ``gpu(0)`` and the CPU, and the slower
sets the pace of every step. Here each device is a distinct context of
one kind: ``cpu(0)``, ``cpu(1)``, ... MXNet gives each context its own
worker thread, so two CPU contexts can run side by side, on separate
cores when the machine has them.
"""

import os
import warnings

import mxnet as mx

from .checks import check_positive
from .validation import gpu_count

ENV_VAR = 'D2LPAR_DEVICES'


def _wanted_kind():
    kind = os.environ.get(ENV_VAR, '').strip().lower()
    if kind not in ('', 'cpu', 'gpu'):
        raise ValueError(
            f'devices: {ENV_VAR}={kind!r} is not understood; '
            f'set it to "cpu" or "gpu", or unset it to let '
            f'd2lpar choose'
        )
    return kind or ('gpu' if mx.context.num_gpus() > 0 else 'cpu')


def devices(n=None):
    """Return ``n`` distinct devices: GPUs if MXNet sees at least n, else CPUs.

    Taught in :doc:`/book/intro`.

    Parameters
    ----------
    n : int, optional
        How many devices. By default all GPUs, or one CPU context when
        there is no GPU.

    Returns
    -------
    list of mxnet.Context
        ``[gpu(0), ..., gpu(n-1)]`` or ``[cpu(0), ..., cpu(n-1)]``; never
        the same context twice. The environment variable
        ``D2LPAR_DEVICES=cpu`` or ``=gpu`` forces the kind.

    Raises
    ------
    ValueError
        If ``n`` is not positive, if ``D2LPAR_DEVICES=gpu`` and more GPUs
        are asked for than MXNet sees, or if ``D2LPAR_DEVICES`` has an
        unknown value.
    RuntimeError
        If ``D2LPAR_DEVICES=gpu`` but MXNet sees no GPU.

    Warns
    -----
    UserWarning
        When more devices are asked for than MXNet sees GPUs (a reader
        with one GPU): ``n`` CPU contexts are returned instead.

    Examples
    --------
    >>> import d2lpar as dp
    >>> dp.devices(2)  # on a machine without GPUs
    [cpu(0), cpu(1)]
    """
    if n is not None:
        check_positive('n', n, 'devices', integer=True)
    num_gpus = mx.context.num_gpus()
    if _wanted_kind() == 'cpu':
        return [mx.cpu(i) for i in range(1 if n is None else n)]
    if num_gpus == 0:
        raise RuntimeError(
            f'devices: {ENV_VAR}=gpu but MXNet sees no GPU; '
            f'install the CUDA build of MXNet matching your '
            f'CUDA (mxnet-cuXXX==1.9.1, see README) or set '
            f'{ENV_VAR}=cpu'
        )
    if n is not None and n > num_gpus:
        if os.environ.get(ENV_VAR, '').strip().lower() == 'gpu':
            raise ValueError(
                f'devices: asked for {n} GPUs but MXNet sees '
                f'only {num_gpus}; ask for at most '
                f'{num_gpus}, or unset {ENV_VAR} to fall back '
                f'to {n} CPU contexts'
            )
        # A reader with one GPU still runs every chapter: k CPU contexts
        # show the same algorithms (mixing a GPU with CPU contexts would
        # make the slowest device set the pace of every step).
        warnings.warn(
            f'devices: {n} devices asked for but MXNet sees '
            f'{gpu_count(num_gpus)}; using {n} CPU contexts instead '
            f'(set {ENV_VAR}=gpu to make this an error)',
            stacklevel=2,
        )
        return [mx.cpu(i) for i in range(n)]
    return [mx.gpu(i) for i in range(num_gpus if n is None else n)]
