"""MXNet beside PyTorch: the library's step in each, and where it goes.

Taught in :doc:`/book/frameworks`. :func:`compare_frameworks` times the
library's data-parallel step (:func:`d2lpar.train_batch` and its twin
:func:`d2lpar.torch.train_batch`) on one and on two devices in both
frameworks, in interleaved rounds in this process, and profiles one
device's step with each framework's own profiler (MXNet's
``mx.profiler``, ``torch.profiler``), summed by kind of operator:
convolution, pooling, ReLU, the dense layers and the rest.

Both frameworks run in the calling process (the book's kernel), one
after the other, each on every core: PyTorch's
threads are set to the cores before each of its measurements (importing
MXNet leaves them at one; :func:`d2lpar.torch.use_every_core`), and
MXNet's step sets its own (:func:`d2lpar.thread_budget`). Where only one
framework is installed (a student's PyTorch notebook), only that one is
measured. Nothing here imports a framework until it is measured.
"""

import contextlib
import os
import re
import sys
import tempfile
from time import perf_counter

from .step import _in_fresh_process
from .timing import span_text

FRAMEWORKS = ('mxnet', 'pytorch')
# The kinds a step's operators are summed by, in the order shown.
KINDS = ('convolution', 'pooling', 'ReLU', 'dense', 'rest')


def available_frameworks():
    """The frameworks of :data:`FRAMEWORKS` installed here."""
    from importlib.machinery import PathFinder

    # PathFinder, not importlib.util.find_spec: that asks d2lpar's import
    # hook too, which sets MXNet up on its first import and would be
    # spent on a mere look-up (d2lpar._runtime).
    modules = {'mxnet': 'mxnet', 'pytorch': 'torch'}
    return [
        f for f in FRAMEWORKS
        if modules[f] in sys.modules or PathFinder.find_spec(modules[f])
    ]  # fmt: skip


def op_kind(name):
    """The kind of an operator, from either framework's profiler name.

    MXNet's names (``Convolution``, ``_backward_Pooling``, ``Activation``
    or ``_npx_relu``, ``FullyConnected``) and PyTorch's (``aten::mkldnn_convolution``,
    ``aten::avg_pool2d_backward``, ``aten::threshold_backward``, which
    is ReLU's backward, ``aten::mm``) fall into one of :data:`KINDS`;
    PyTorch's autograd nodes (``ReluBackward0``) count as the rest.
    """
    low = name.lower()
    # PyTorch's autograd nodes ('autograd::engine::evaluate_function:
    # ConvolutionBackward0', 'ReluBackward0'): their self time is the
    # engine's bookkeeping; the operators they call are counted apart.
    if low.startswith('autograd::') or re.search(r'backward\d+$', low):
        return 'rest'
    if 'conv' in low:
        return 'convolution'
    if 'pool' in low:
        return 'pooling'
    # aten::relu calls aten::clamp_min, whose self time is the ReLU's
    # (LeNet clamps nothing else); MXNet's Activation is ReLU in LeNet,
    # the only activation the book's models use.
    if (
        'relu' in low
        or 'threshold' in low
        or 'clamp_min' in low
        or 'activation' in low
    ):
        return 'ReLU'
    bare = low.split('::')[-1].lstrip('_')
    dense = ('fullyconnected', 'fully_connected', 'addmm', 'mm', 'matmul',
             'linear', 'dot', 'npi_dot', 'np_dot', 'backward_np_dot',
             'backward_fullyconnected')  # fmt: skip
    if bare in dense:
        return 'dense'
    return 'rest'


def by_kind(ops):
    """Sum ``{operator name: ms}`` into ``{kind: ms}`` over :data:`KINDS`."""
    kinds = dict.fromkeys(KINDS, 0.0)
    for name, ms in ops.items():
        kinds[op_kind(name)] += ms
    return kinds


def _batch(batch_size, seed=0):
    """One minibatch of random images and labels (numpy): the step's
    time does not depend on the values."""
    import numpy as onp

    rng = onp.random.default_rng(seed)
    X = rng.uniform(size=(batch_size, 1, 28, 28)).astype('float32')
    y = rng.integers(0, 10, batch_size).astype('int32')
    return X, y


def _mxnet_devices(num_devices):
    """MXNet's CPU contexts for ``num_devices``, used by nothing else.

    One device is ``cpu(2)``, given every core before it first runs: a
    worker's threads may go down but never up (:mod:`d2lpar.threads`),
    and ``cpu(0)`` and ``cpu(1)`` may have trained as two devices in the
    same kernel, at a share each (a reader's notebook that ran
    :doc:`/book/training` first). MXNet's profiler counts contexts
    up to the cores plus two and aborts the process on a higher one, so
    the profiled device is at most ``cpu(2)``. Several devices are
    ``cpu(3)``, ``cpu(4)``, ... (the budget gives each its share).
    """
    import mxnet as mx

    import d2lpar as dp

    if num_devices == 1:
        one = mx.cpu(2)
        dp.threads.claim_every_core(one)
        return [one]
    return [mx.cpu(3 + i) for i in range(num_devices)]


def compare_relu(
    rounds=5, steps=20, warmup=50, shape=(256, 20, 26, 26),
    fresh_process=True, timeout=300,
):  # fmt: skip
    """MXNet's two ReLUs, forward and backward, in interleaved rounds.

    ``npx.relu`` (MXNet's own element-wise kernel, held to MXNet's
    thread cap) against the library's :func:`d2lpar.model.relu`
    (``Activation``: oneDNN's kernel, which may use every thread the
    device has), on one device given every core, on an input of LeNet's
    first ReLU's shape. Both are warmed up, then each round times both,
    the first alternating from round to round.

    Parameters
    ----------
    rounds : int, optional
        Interleaved rounds.
    steps : int, optional
        Timed passes per round and function.
    warmup : int, optional
        Untimed passes of each function before the first round (with 10
        the first round was still up to twice as slow as the rest here;
        with 50 it was not).
    shape : tuple of int, optional
        The input's shape.
    fresh_process : bool, optional
        Measure in a fresh Python process (the default): in a process
        that has run PyTorch, its OpenMP threads may still spin on the
        cores MXNet's threads want, and a context may already have
        fewer threads than the cores.
    timeout : float, optional
        Seconds the fresh process may take.

    Returns
    -------
    dict
        ``{'npx.relu': [ms, ...], 'Activation': [ms, ...]}``: ms per
        forward and backward pass, one per round.

    Raises
    ------
    ValueError
        If ``rounds`` or ``steps`` is below 1.
    """
    if rounds < 1 or steps < 1:
        raise ValueError(
            f'compare_relu: rounds and steps must be at least 1, got '
            f'rounds={rounds}, steps={steps}'
        )
    if fresh_process:
        args = (rounds, steps, warmup, tuple(shape), False)
        return _in_fresh_process({}, compare_relu, args, timeout)
    import numpy as onp
    from mxnet import autograd, np, npx

    from ..model import relu

    (device,) = _mxnet_devices(1)
    # Both signs, so that ReLU zeroes about half of the input.
    values = onp.random.default_rng(0).uniform(-1, 1, size=shape)
    X = np.array(values.astype('float32'), ctx=device)
    X.attach_grad()
    fns = {'npx.relu': npx.relu, 'Activation': relu}

    def passes(fn, n):
        for _ in range(n):
            with autograd.record():
                out = fn(X)
            out.backward()
        npx.waitall()

    for fn in fns.values():
        passes(fn, warmup)
    times = {name: [] for name in fns}
    for r in range(rounds):
        for name in round_order(list(fns), r):
            start = perf_counter()
            passes(fns[name], steps)
            times[name].append((perf_counter() - start) / steps * 1000)
    return times


def _mxnet_step(num_devices, batch_size):
    """(step, wait): the library's MXNet step on one minibatch in memory."""
    from mxnet import np, npx

    import d2lpar as dp

    X, y = (np.array(a) for a in _batch(batch_size))
    devices = _mxnet_devices(num_devices)
    params = dp.init_lenet_params(0, 0.1)
    device_params = [dp.get_params(params, d) for d in devices]

    def step():
        dp.train_batch(X, y, device_params, devices, lr=0.2)

    return step, npx.waitall


def _torch_step(num_devices, batch_size):
    """(step, wait): PyTorch's step, on every core."""
    import torch

    from .. import torch as tdp
    from ..torch.training import wait_for

    tdp.use_every_core()
    X, y = (torch.from_numpy(a) for a in _batch(batch_size))
    y = y.long()
    devices = tdp.devices(num_devices)
    params = tdp.init_lenet_params(0, 0.1)
    device_params = [tdp.get_params(params, d) for d in devices]

    def step():
        tdp.train_batch(X, y, device_params, devices, lr=0.2)

    return step, wait_for(devices)


STEPS = {'mxnet': _mxnet_step, 'pytorch': _torch_step}


def time_step(framework, num_devices, batch_size=256, steps=10, warmup=2):
    """Milliseconds per step of the library's step in ``framework``.

    ``warmup`` steps first (memory, oneDNN's kernels), then ``steps``
    steps queued one after the other, as the training loop does, and
    timed as a block that ends when every device has finished.
    """
    step, wait = STEPS[framework](num_devices, batch_size)
    for _ in range(warmup):
        step()
    wait()
    start = perf_counter()
    for _ in range(steps):
        step()
    wait()
    return 1000 * (perf_counter() - start) / steps


def _timed(step, wait, steps):
    """Run ``steps`` steps; their wall-clock ms per step."""
    start = perf_counter()
    for _ in range(steps):
        step()
    wait()
    return 1000 * (perf_counter() - start) / steps


def _mxnet_ops(step, wait, steps):
    """(ms per step of each MXNet operator, from MXNet's profiler; a
    profiled step's wall-clock ms)."""
    from mxnet import profiler

    from .profile import _operator_ms

    # The trace file MXNet insists on naming goes to a temporary folder.
    trace = os.path.join(tempfile.mkdtemp(), 'profile.json')
    profiler.set_config(profile_all=True, aggregate_stats=True,
                        filename=trace)  # fmt: skip
    profiler.dumps(reset=True)  # nothing from before counts
    profiler.set_state('run')
    wall = _timed(step, wait, steps)
    profiler.set_state('stop')
    return _operator_ms(profiler.dumps(reset=True), steps), wall


@contextlib.contextmanager
def _without_kineto_notes():
    """Keep the lines PyTorch's profiler library writes to file
    descriptor 2 as it starts and stops (``USDT: ... profiler_start``)
    out of the output; any other line it writes is passed on."""
    sys.stderr.flush()
    with tempfile.TemporaryFile('w+') as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            for line in log:
                if not line.startswith('USDT:'):
                    sys.stderr.write(line)


def _torch_ops(step, wait, steps):
    """(ms per step of each PyTorch operator: its self time, without the
    operators it calls, so that nothing is counted twice; a profiled
    step's wall-clock ms)."""
    from torch.profiler import ProfilerActivity, profile

    with _without_kineto_notes():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            wall = _timed(step, wait, steps)
    ops = {}
    for event in prof.key_averages():
        ops[event.key] = event.self_cpu_time_total / 1000 / steps
    return dict(sorted(ops.items(), key=lambda kv: -kv[1])), wall


def profile_step(framework, batch_size=256, steps=5, warmup=2):
    """Where one device's step goes, by operator and by kind.

    Parameters
    ----------
    framework : str
        ``'mxnet'`` or ``'pytorch'``.
    batch_size : int, optional
        Examples per step.
    steps : int, optional
        Steps profiled.
    warmup : int, optional
        Unprofiled steps before them.

    Returns
    -------
    dict
        ``operators`` (ms per step by the profiler's operator name,
        largest first), ``kinds`` (the same summed by :func:`op_kind`,
        in the order of :data:`KINDS`) and ``profiled_ms`` (a profiled
        step's wall-clock ms, from the profiler's start to its stop: the
        operators' sum falls short of it by the time between operators).
    """
    step, wait = STEPS[framework](1, batch_size)
    for _ in range(warmup):
        step()
    wait()
    run = {'mxnet': _mxnet_ops, 'pytorch': _torch_ops}[framework]
    ops, profiled_ms = run(step, wait, steps)
    return dict(operators=ops, kinds=by_kind(ops), profiled_ms=profiled_ms)


def round_order(frameworks, r):
    """Round ``r``'s order: as given in even rounds, reversed in odd ones,
    so that neither framework always runs first."""
    return list(frameworks)[:: -1 if r % 2 else 1]


def compare_frameworks(frameworks=None, device_counts=(1, 2), rounds=3,
                       steps=10, profile_steps=5, batch_size=256):  # fmt: skip
    """Each framework's step on 1 and 2 devices and its profile, interleaved.

    In every round each framework in turn (the order alternating by
    round, :func:`round_order`) is timed on each device count
    (:func:`~d2lpar.bench.frameworks.time_step`) and then profiled on
    one device (:func:`~d2lpar.bench.frameworks.profile_step`).

    Parameters
    ----------
    frameworks : sequence of str, optional
        Default: those installed (:func:`available_frameworks`).
    device_counts : sequence of int, optional
    rounds, steps, profile_steps, batch_size : int, optional

    Returns
    -------
    dict
        ``frameworks``; ``ms[framework][k]``: ms per step, one per round;
        ``kinds[framework][kind]``: the profiled ms per step, one per
        round; ``profiled_ms[framework]``: a profiled step's wall-clock
        ms, one per round; ``operators[framework]``: the last round's
        operators (ms per step by name); ``threads``: PyTorch's threads
        and the cores.
    """
    if frameworks is None:
        frameworks = available_frameworks()
    ms = {f: {k: [] for k in device_counts} for f in frameworks}
    kinds = {f: {kind: [] for kind in KINDS} for f in frameworks}
    profiled = {f: [] for f in frameworks}
    operators = {}
    for r in range(rounds):
        for f in round_order(frameworks, r):
            for k in device_counts:
                ms[f][k].append(time_step(f, k, batch_size, steps))
            p = profile_step(f, batch_size, profile_steps)
            for kind, value in p['kinds'].items():
                kinds[f][kind].append(value)
            profiled[f].append(p['profiled_ms'])
            operators[f] = p['operators']
    result = dict(frameworks=list(frameworks), ms=ms, kinds=kinds,
                  profiled_ms=profiled, operators=operators,
                  cores=_cores())  # fmt: skip
    if 'pytorch' in frameworks:
        import torch

        result['torch_threads'] = torch.get_num_threads()
    return result


def _cores():
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


NAMES = {'mxnet': 'MXNet', 'pytorch': 'PyTorch'}


def _span(values):
    """'lowest-highest' of one setting's rounds (ms, one decimal), one
    number where both round alike (as the pages print a range)."""
    return span_text(values, 1)


def format_frameworks(result):
    """The comparison as a table: steps, then the profile by kind.

    Every cell is the range over rounds (ms per step).
    """
    fws = result['frameworks']
    head = f'{"":<26}' + ''.join(f'{NAMES[f]:>16}' for f in fws)
    lines = [head]
    counts = list(result['ms'][fws[0]])
    for k in counts:
        label = f'step, {k} device{"s" if k > 1 else ""} (ms)'
        lines.append(
            f'{label:<26}'
            + ''.join(f'{_span(result["ms"][f][k]):>16}' for f in fws)
        )
    lines.append('profiled step, 1 device, by kind of operator (ms):')
    for kind in KINDS:
        lines.append(
            f'{"  " + kind:<26}'
            + ''.join(f'{_span(result["kinds"][f][kind]):>16}' for f in fws)
        )
    totals = {
        f: [sum(v) for v in zip(*result['kinds'][f].values())] for f in fws
    }
    lines.append(
        f'{"  all operators":<26}'
        + ''.join(f'{_span(totals[f]):>16}' for f in fws)
    )
    lines.append(
        f'{"  profiled step":<26}'
        + ''.join(f'{_span(result["profiled_ms"][f]):>16}' for f in fws)
    )
    return '\n'.join(lines)


def kind_differences(result, a='mxnet', b='pytorch'):
    """Per kind, ``a``'s ms minus ``b``'s in each round (paired).

    Returns
    -------
    dict
        ``{kind: [difference per round]}`` in the order of :data:`KINDS`.
    """
    return {
        kind: [x - y for x, y in zip(result['kinds'][a][kind],
                                     result['kinds'][b][kind])]
        for kind in KINDS
    }  # fmt: skip


# One training step of LeNet on one device: forward, loss, backward.
_MXNET_STEP = """
import d2lpar as dp
from mxnet import autograd, np, npx
X = np.ones(({batch}, 1, 28, 28))
y = np.zeros({batch})
params = dp.get_params(dp.init_lenet_params(0, 0.1), X.ctx)
for _ in range(2):
    with autograd.record():
        loss = dp.cross_entropy(dp.lenet(X, params), y).sum()
    loss.backward()
    npx.waitall()
"""


def parse_onednn_verbose(text):
    """oneDNN's verbose log: its version and each executed primitive.

    Reads oneDNN 2's lines (``dnnl_verbose,exec,cpu,convolution,
    jit:avx2,forward_training,...,ms``) and 3's (``onednn_verbose,v1,
    primitive,exec,cpu,...``).

    Returns
    -------
    (str, list of (str, str, str, float))
        The version (``'oneDNN v3.12.0'``, or ``''``) and, per primitive
        run, ``(primitive, implementation, propagation kind, ms)``.
    """
    version, rows = '', []
    for line in text.splitlines():
        if not line.startswith(('dnnl_verbose,', 'onednn_verbose,')):
            continue
        fields = line.split(',')
        found = re.search(r'oneDNN v[\d.]+', line)
        if found and 'info' in fields:
            version = found.group(0)
        if 'exec' in fields:
            at = fields.index('exec')
            primitive, impl, kind = fields[at + 2 : at + 5]
            rows.append((primitive, impl, kind, float(fields[-1])))
    return version, rows


def onednn_kernels(framework, batch_size=256, timeout=120):
    """Which oneDNN kernels one device's step runs in ``framework``.

    The second of two forward and backward passes, with oneDNN's verbose
    log on: for MXNet in a fresh process (oneDNN reads
    ``DNNL_VERBOSE`` once, and MXNet offers no switch), for PyTorch in
    this one (``torch.backends.mkldnn.verbose``), with the C library's
    output caught from file descriptor 1.

    Returns
    -------
    (str, list of (str, str, str, float))
        As :func:`~d2lpar.bench.frameworks.parse_onednn_verbose` (for
        MXNet the second pass's rows are not told apart from the
        first's: both are returned).
    """
    if framework == 'mxnet':
        import subprocess

        out = subprocess.run(
            [sys.executable, '-c', _MXNET_STEP.format(batch=batch_size)],
            capture_output=True, text=True, timeout=timeout, check=True,
            env=dict(os.environ, DNNL_VERBOSE='1', MKLDNN_VERBOSE='1'),
        ).stdout  # fmt: skip
        return parse_onednn_verbose(out)
    import torch

    from .. import torch as tdp

    X = torch.ones(batch_size, 1, 28, 28)
    y = torch.zeros(batch_size, dtype=torch.long)
    params = tdp.get_params(tdp.init_lenet_params(0, 0.1), X.device)

    def step():
        tdp.cross_entropy(tdp.lenet(X, params), y).sum().backward()

    step()
    sys.stdout.flush()
    with tempfile.TemporaryFile('w+') as log:
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(
                torch.backends.mkldnn.VERBOSE_ON
            ):
                step()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return parse_onednn_verbose(log.read())


def implementations(rows, *primitives):
    """The distinct kernels (sorted) that ran ``primitives`` in ``rows``
    of :func:`~d2lpar.bench.frameworks.parse_onednn_verbose`, e.g.
    ``['jit:avx2']`` for ``'convolution'``."""
    return sorted({impl for p, impl, _, _ in rows if p in primitives})
