"""The machine's limit on a LeNet step, and the kernels that run it.

The limit is the step's floating-point operations, counted from LeNet's
shapes (:func:`lenet_flops`: the products of the four weighted layers,
forward and backward, two operations per multiply-add), divided by the
rate a large matrix product reaches on this machine's cores
(:func:`matmul_rate`, the same two operations per multiply-add),
measured in the same run as the steps it is compared with. It is an
estimate, not a bound: a convolution computed another way (Winograd's or
an FFT's algorithm) needs fewer operations than the count assumes, a
kernel could beat the product's rate, and the operations the count
leaves out (ReLU, pooling, the loss, the update) take time of their own. :func:`kernel_implementations` says which
oneDNN kernel runs each layer, which explains part of the gap.
"""

import os

from .step import _in_fresh_process

# The CPU context the matrix product's rate is measured on: one no
# benchmark trains on, so its worker can be given every core first.
RATE_CONTEXT = 31


def lenet_flops(batch_size=1, layers=None):
    """Floating-point operations of one LeNet training step.

    Counted from :data:`d2lpar.LENET_SHAPES` and the 28x28 input: a
    multiply-add is 2 operations; the forward pass does every layer's
    products once; the backward pass does them twice (the gradient with
    respect to the weights and the one with respect to the layer's
    input), except the input gradient of the first layer, which nobody
    needs. Element-wise operations (ReLU, pooling, the loss, the update)
    are left out: they are memory-bound and small in operation count.

    Parameters
    ----------
    batch_size : int, optional
    layers : {None, 'conv', 'dense'}, optional
        Count only the convolutions or only the dense layers.

    Returns
    -------
    float
        Operations for ``batch_size`` examples, forward and backward.
    """
    from ..model import LENET_SHAPES

    side, total, first = 28, 0, True
    for name, shape in LENET_SHAPES:
        if not name.startswith('W'):
            continue
        conv = len(shape) == 4
        if conv:  # convolution, then 2x2 pooling (lenet())
            out_ch, in_ch, kh, kw = shape
            side = side - kh + 1
            macs = out_ch * in_ch * kh * kw * side * side
            side //= 2
        else:
            macs = shape[0] * shape[1]
        passes = 2 if first else 3  # forward, weight grad, input grad
        first = False
        if layers is None or layers == ('conv' if conv else 'dense'):
            total += 2 * passes * macs
    return batch_size * total


def products(A, B):
    """MXNet's two large matrix products of ``A`` and ``B``, by name.

    The CPU wheel has two: ``np.dot`` (OpenBLAS) and
    ``npx.fully_connected`` (oneDNN's inner product, which multiplies by
    ``B`` transposed). Which is faster depends on the processor: on this
    project's machines oneDNN's reached several times OpenBLAS's rate on
    some processors and not on others, so :func:`matmul_rate` times both.

    Parameters
    ----------
    A, B : mxnet.np.ndarray
        Square matrices of the same size, on one device.

    Returns
    -------
    dict of str to callable
        Each computes one ``n x n x n`` product (``2 n**3`` operations).
    """
    from mxnet import np, npx

    n = A.shape[0]
    return {
        'np.dot (OpenBLAS)': lambda: np.dot(A, B),
        'npx.fully_connected (oneDNN)': lambda: npx.fully_connected(
            A, B, num_hidden=n, no_bias=True
        ),
    }


def matmul_rates(n=1024, repeats=7, ctx=None):
    """GFLOP/s of each of MXNet's matrix products (:func:`products`).

    Run it on a context whose worker uses the cores to count: cpu(0) in a
    process started with ``OMP_NUM_THREADS`` set (:func:`machine_limit`),
    or a context given every core before it ran anything (``ctx``, as
    :func:`rate_on_every_core` does).

    Parameters
    ----------
    n : int, optional
        Side of the square matrices (1024: large enough for a product to
        reach the cores' rate, small enough to time in a second).
    repeats : int, optional
        Timed products of each kind; the median is used.
    ctx : mxnet.Context, optional
        Where to run them; cpu(0) by default.

    Returns
    -------
    dict of str to float
        GFLOP/s under the names of :func:`products`.
    """
    from mxnet import np, npx

    from .timing import median_seconds

    ctx = ctx or npx.cpu(0)
    A = np.ones((n, n), dtype='float32', ctx=ctx)
    B = np.ones((n, n), dtype='float32', ctx=ctx)
    return {
        name: 2 * n**3 / median_seconds(fn, repeats, 2) / 1e9
        for name, fn in products(A, B).items()
    }


def matmul_rate(n=1024, repeats=7, ctx=None):
    """GFLOP/s of the faster of MXNet's matrix products here.

    The limit is what this machine's arithmetic can reach, so it takes
    the faster kernel: timing only ``np.dot`` put the limit several times
    too low on a processor where OpenBLAS ran without its fastest
    instructions (LeNet's oneDNN convolutions then ran faster than the
    "limit").

    Parameters
    ----------
    n : int, optional
        Side of the square matrices (large enough for a product to reach
        the cores' rate, small enough to time in a second).
    repeats : int, optional
        Timed products of each kind; the median is used.
    ctx : mxnet.Context, optional
        Where to run them; ``cpu(0)`` by default. Its worker must
        already use the cores to count (see
        :func:`d2lpar.bench.machine_limit` and
        :func:`d2lpar.bench.rate_on_every_core`).

    Returns
    -------
    float
        GFLOP/s (``2 n**3`` operations per product).
    """
    return max(matmul_rates(n, repeats, ctx).values())


def machine_limit(cores=None, timeout=120):
    """The matrix-product rate on ``cores`` threads, in a fresh process.

    Returns
    -------
    float
        GFLOP/s.
    """
    from ..threads import available_cores

    cores = cores or available_cores()
    env = {'OMP_NUM_THREADS': str(cores)}
    return _in_fresh_process(env, matmul_rate, (), timeout)


def rate_on_every_core():
    """GFLOP/s of the matrix product on a context given every core.

    For a process that has trained: cpu(0) may have trained beside other
    devices and keeps its share of the cores then
    (:mod:`d2lpar.threads`), or ran d2l's path at MXNet's default, so
    the product runs on a context of
    its own (:data:`RATE_CONTEXT`), given every core before it runs
    anything.

    Returns
    -------
    float
        GFLOP/s (:func:`matmul_rate`).
    """
    from mxnet import npx

    from ..threads import claim_every_core

    npx.waitall()  # nothing else computes while the product is timed
    ctx = npx.cpu(RATE_CONTEXT)
    claim_every_core(ctx)
    return matmul_rate(ctx=ctx)


def kernel_implementations(batch_size=256, timeout=120):
    """Which oneDNN kernel runs LeNet's convolutions and poolings here.

    Runs the forward layers once in a fresh process with oneDNN's
    verbose log on (``DNNL_VERBOSE=1``, printed by the C library, so
    the child's output is captured rather than this process's).

    Returns
    -------
    list of (str, str, float)
        ``(primitive, implementation, ms)`` per operator executed, e.g.
        ``('pooling_v2', 'simple_nchw:any', 20.1)``.
    """
    import subprocess
    import sys

    code = (
        'import d2lpar as dp\n'
        'from mxnet import np, npx\n'
        f'X = np.ones(({batch_size}, 1, 28, 28))\n'
        'dp.lenet(X, dp.init_lenet_params()).wait_to_read()\n'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, DNNL_VERBOSE='1', MKLDNN_VERBOSE='1'),
        check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split(',')
        if line.startswith('dnnl_verbose,exec,cpu') and len(fields) > 5:
            rows.append((fields[3], fields[4], float(fields[-1])))
    return rows
