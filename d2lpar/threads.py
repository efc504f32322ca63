"""How many cores each CPU device may use: one device all, k devices a share.

MXNet runs the operators of each CPU context on that context's own
worker thread (one, unless ``MXNET_CPU_WORKER_NTHREADS`` asks for more;
the budget below reaches one of them), and each operator (a convolution,
a matrix product) splits its work over as many OpenMP threads as that
worker thread's OpenMP setting allows. MXNet 1.9 sets it when it starts
a worker (``on_start_worker_thread`` in ``src/engine/openmp.cc``): to
``OMP_NUM_THREADS`` if that is set; else to ``MXNET_OMP_MAX_THREADS`` if
that is set (at most the processors); else to half the processors the
process may use on x86, all of them on other CPUs, at least one
(:func:`mxnet_default_threads`). Every context's worker starts so,
however many contexts train: on this book's 2-core machine each has one
thread, so "two devices vs one" compares two cores with one; on a
16-core x86 machine each has eight, so one device leaves half the cores
idle and two use all of them. Unless ``OMP_NUM_THREADS`` is set, MXNet's
own kernels (element-wise operations; not oneDNN's operators, nor
OpenBLAS) never use more threads than that cap, whatever the worker's
setting (``GetRecommendedOMPThreadCount``).

:func:`thread_budget` gives one CPU device every core and k CPU devices
``cores // k`` threads each, at least one. MXNet has no per-context
setting for this (``OMP_NUM_THREADS`` is read once, for all threads,
and ``MXSetNumOMPThreads`` only sets the calling thread), so the budget
is applied where it takes effect: a tiny operation pushed to each
device's worker thread through MXNet's engine (``MXEnginePushSync``)
calls OpenMP's ``omp_set_num_threads`` there.

Several devices may hold several threads each because LeNet's dense
layers use oneDNN's product (:func:`d2lpar.model.dense`), not
``np.dot``. Two CPU contexts that run OpenBLAS's threaded matrix
product (``np.dot``) at the same time hang: the OpenMP build of
OpenBLAS that MXNet's wheel ships shares its thread buffers between
concurrent threaded calls, and the callers spin in ``exec_blas``
forever (seen in a debugger; this is the "2 contexts +
OMP_NUM_THREADS=2 hangs" trap). oneDNN's product does not hang there:
``tests/test_threads.py`` trains LeNet on two devices with two threads
each, under a timeout. A model that calls ``np.dot`` on several devices
at once needs ``per_device=1`` (or :func:`d2lpar.model.dense`), as does
any model with ``MXNET_MKLDNN_ENABLED=0``, which sends LeNet's dense
layers back to OpenBLAS.

A worker's threads may go down but never up again. MXNet builds each
oneDNN operator (a convolution, a pooling) once per worker and input
shape, for the thread count of that moment, and caches it. Run later with
more threads, the cached operator writes past its buffers: training one
device after two in the same process crashed with a segmentation fault,
or glibc's "corrupted double-linked list", in 3 of 3 runs here (``gdb``:
in ``MKLDNNConvolutionForwardFullFeature``), while going from two
threads to one never did. MXNet offers no way to empty that cache, so
:func:`thread_budget` never raises a worker above the fewest threads it
has had, and says so once per device. Since MXNet starts a worker with
fewer threads than cores (half of them on x86), ``import d2lpar`` gives
``cpu(0)``, the device that trains alone, every core before anything
runs on it (:func:`claim_every_core`).

Processes share cores the same way: each worker of a multi-process job
imports ``d2lpar``, so each would run every core's threads on the same
cores. :func:`share_cores` lowers a worker to its share of them.

Threads of one device wait for each other at the end of every operator.
By default the OpenMP runtime spins a while before sleeping, which is the
fastest on an idle machine (88 ms against 96-136 ms per LeNet step with
``OMP_WAIT_POLICY=PASSIVE``, measured here side by side). When another
program takes a core, a spinning thread holds up its partner and a step
can take several times longer (805 ms against 154 ms for the backward
convolutions, measured under load): on a busy machine, start Python with
``OMP_WAIT_POLICY=PASSIVE``.
"""

import ctypes
import functools
import os
import platform
import threading
import warnings

# No module-level ``import mxnet``: d2lpar._runtime.start() runs when
# MXNet is first imported and uses this module, which must then be whole.

# The threads each context's worker has now, as set or first seen here
# (MXNet starts every worker at mxnet_default_threads()).
_APPLIED = {}
# The fewest threads each worker has had: never raised above (docstring).
_LOWEST = {}
# Contexts already warned about keeping fewer threads than asked.
_KEPT_WARNED = set()
# Non-empty once the "no OpenMP" warning was given.
_WARNED = []


class ThreadBudgetWarning(UserWarning):
    """A CPU device keeps fewer threads than asked.

    :func:`~d2lpar.thread_budget` says when and why. Its own category
    so that code which knows its speed does not matter (a check's
    reference computation) can silence just this warning.
    """


# The engine calls back a C function; ctypes needs these signatures.
_SYNC_FUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class _Context(ctypes.Structure):
    """MXNet's C++ ``Context``: the device type and id (what a handle is)."""

    _fields_ = [('dev_type', ctypes.c_int), ('dev_id', ctypes.c_int32)]


def available_cores():
    """The cores this process may run on (its CPU affinity, where known)."""
    if hasattr(os, 'sched_getaffinity'):  # Linux
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def total_threads():
    """Threads to share out: ``OMP_NUM_THREADS`` if set, else every core."""
    value = os.environ.get('OMP_NUM_THREADS', '').split(',')[0].strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return available_cores()


@functools.lru_cache(maxsize=1)
def _openmp():
    """The OpenMP runtime MXNet loaded (libgomp), or None."""
    try:
        with open('/proc/self/maps') as maps:  # the libraries loaded
            paths = [line.split()[-1] for line in maps]
    except OSError:  # not Linux: no way to find it here
        return None
    for path in paths:
        if 'libgomp' in os.path.basename(path):
            return ctypes.CDLL(path)
    return None


def run_on_worker(ctx, fn, timeout=600):
    """Run ``fn()`` on the engine's worker thread of CPU context ``ctx``.

    Returns once it has run (after the work already queued on ``ctx``),
    without ``npx.waitall()``: a budget changes rarely, once per call of
    :func:`d2lpar.train` and not per step, and other devices need not
    finish their work for it.
    """
    import mxnet as mx

    done = threading.Event()

    def call(run_context, param):
        try:
            fn()
        finally:
            done.set()

    callback = _SYNC_FUNC(call)
    handle = _Context(ctx.device_typeid, ctx.device_id)
    status = mx.base._LIB.MXEnginePushSync(
        callback, None, None, ctypes.byref(handle),
        None, 0, None, 0, None, 0, None,
    )  # fmt: skip
    if status != 0:
        raise RuntimeError(mx.base.py_str(mx.base._LIB.MXGetLastError()))
    # Keeps callback and handle alive until the engine has called it.
    if not done.wait(timeout):
        raise RuntimeError(
            f'run_on_worker: the worker of {ctx} did not run the call '
            f'within {timeout} s; is an earlier operation stuck?'
        )


def worker_threads(ctx):
    """OpenMP threads the worker of CPU context ``ctx`` uses now.

    Parameters
    ----------
    ctx : mxnet.Context
        A CPU context.

    Returns
    -------
    int
        What ``omp_get_max_threads()`` says on that context's worker
        thread: the number of threads its next operator may use.
    """
    openmp = _openmp()
    if openmp is None:
        return 1
    seen = []
    run_on_worker(ctx, lambda: seen.append(openmp.omp_get_max_threads()))
    return seen[0]


def _set_threads(ctx, threads):
    """Set the worker of ``ctx`` to ``threads``; remember the lowest."""
    openmp = _openmp()
    run_on_worker(ctx, lambda: openmp.omp_set_num_threads(threads))
    _APPLIED[ctx] = threads
    _LOWEST[ctx] = min(threads, _LOWEST.get(ctx, threads))


def engine_restarted_in_parent():
    """Give every CPU worker its threads back after a fork.

    MXNet's own ``pthread_atfork`` handlers stop its engine before a
    ``fork()`` and start it again after, in the parent as in the child:
    every worker is then a new thread with MXNet's default thread count.
    Measured: cpu(0) had 2 threads, and 1 after ``subprocess.run(...,
    preexec_fn=...)`` (which forks; without ``preexec_fn`` Python spawns
    without forking, and nothing changes), while the budget still said 2.
    The budget is applied again here, at once: a new worker's first
    operator must not run at fewer threads than it later gets (oneDNN
    caches each operator per worker thread, for the thread count it was
    built with; see the module docstring).
    """
    if _openmp() is None:
        return
    for ctx, threads in list(_APPLIED.items()):
        _set_threads(ctx, threads)


def engine_restarted_in_child():
    """In a forked child, MXNet's workers are new: forget the budget.

    No MXNet call here (the child may be about to ``exec``); the child
    starts from MXNet's default in a forked process and never goes
    above it.
    """
    for ctx in list(_APPLIED):
        _APPLIED[ctx] = _LOWEST[ctx] = mxnet_default_threads(forked=True)


def claim_every_core(ctx):
    """Give ``ctx``'s worker every core before it runs any operator.

    :func:`thread_budget` never raises a worker above the fewest threads
    it has had (see the module docstring), and MXNet starts a worker at
    :func:`mxnet_default_threads` (half the cores on x86), so a device
    could never get every core. ``import d2lpar`` calls this for
    ``cpu(0)``, the device that trains alone; the benchmarks call it for
    a context they use for nothing else.

    Parameters
    ----------
    ctx : mxnet.Context
        A CPU context on which no operator has run yet: this cannot be
        checked, and one that ran at fewer threads may crash later.

    Returns
    -------
    int
        The threads its worker has now (1 without an OpenMP runtime).
    """
    if ctx in _LOWEST or _openmp() is None:
        return _APPLIED.get(ctx, 1)
    _set_threads(ctx, total_threads())
    return _APPLIED[ctx]


# Where MXNet halves the processors (its ARCH_IS_INTEL_X86).
_X86 = ('x86_64', 'amd64', 'i386', 'i486', 'i586', 'i686', 'x86')


def _env_int(name):
    """The integer in environment variable ``name``, or None.

    As MXNet reads it (``dmlc::GetEnv``): unset or empty means unset.
    For ``OMP_NUM_THREADS``, a list's first value is the one that
    counts; a value that is not an integer counts as unset.
    """
    value = os.environ.get(name, '').split(',')[0].strip()
    try:
        return int(value)
    except ValueError:
        return None


def mxnet_default_threads(forked=False):
    """The OpenMP threads MXNet 1.9 starts each CPU worker with.

    What ``OpenMP::on_start_worker_thread`` in MXNet's
    ``src/engine/openmp.cc`` gives every CPU context's worker thread
    when it starts, before :func:`thread_budget` changes anything.

    Parameters
    ----------
    forked : bool, optional
        For a child process made by ``fork()`` after MXNet was loaded:
        MXNet's fork handler there turns its OpenMP use off, so workers
        get one thread unless ``OMP_NUM_THREADS`` is set.

    Returns
    -------
    int
        ``OMP_NUM_THREADS`` if set (MXNet then leaves the worker at
        OpenMP's own default, that value). Else, in a forked child, 1.
        Else ``MXNET_OMP_MAX_THREADS`` if set, capped at the processors
        this process may use (0 means no cap, below 0 gives 1). Else
        half those processors on x86 (all of them on other CPUs), at
        least 1: 1 on a 2-core x86 machine, 8 on a 16-core one.
    """
    omp = _env_int('OMP_NUM_THREADS')
    if omp is not None and omp > 0:
        return omp
    if forked:
        return 1
    procs = available_cores()
    cap = _env_int('MXNET_OMP_MAX_THREADS')
    if cap is None:  # MXNet's own cap: half the processors on x86
        cap = procs // 2 if platform.machine().lower() in _X86 else procs
    # GetRecommendedOMPThreadCount: OpenMP's default (every processor)
    # unless the cap is lower; a cap of 0 is none; OpenMP makes n < 1 1.
    return max(1, procs if cap == 0 else min(procs, cap))


def share_cores(num_processes, ctx=None):
    """Lower ``ctx``'s worker to its process's share of the cores.

    For a process that is one of ``num_processes`` training on this
    machine at once (the workers of a multi-process job): every process
    imports ``d2lpar``, which gives ``cpu(0)`` every core, and k
    processes each running every core's OpenMP threads on the same cores
    oversubscribe them: every operator's threads wait for each other at
    its end, while the other processes' threads hold the cores, so the
    steps get slower, not faster.

    Parameters
    ----------
    num_processes : int
        Processes that share this machine's cores (at least 1).
    ctx : mxnet.Context, optional
        The CPU device the process trains on; default ``cpu(0)``.

    Returns
    -------
    int
        The threads ``ctx``'s worker has now: ``OMP_NUM_THREADS`` when
        it is set (the user chose per process), else
        ``max(1, cores // num_processes)``; never more than it had.

    Raises
    ------
    ValueError
        If ``num_processes`` is below 1.
    """
    if num_processes < 1:
        raise ValueError(
            f'share_cores: num_processes={num_processes!r}; give the '
            'number of processes training on this machine, at least 1'
        )
    import mxnet as mx

    ctx = ctx or mx.cpu(0)
    omp = _env_int('OMP_NUM_THREADS')
    if omp is not None and omp > 0:
        share = omp  # the user's choice, per process
    else:
        share = max(1, available_cores() // num_processes)
    return thread_budget([ctx], per_device=share)[ctx]


def _warn_kept(ctx, wanted):
    """Say once per context why it keeps fewer threads than asked for."""
    if ctx in _KEPT_WARNED:
        return
    _KEPT_WARNED.add(ctx)
    warnings.warn(
        f'thread_budget: {ctx} keeps {_LOWEST[ctx]} of the {wanted} '
        f'OpenMP threads asked for: its worker already ran with '
        f'{_LOWEST[ctx]}, and '
        "MXNet's oneDNN operators, cached per shape on each worker, "
        'crash when run with more threads than they were built for. '
        'Training is correct, only slower. To give one device every '
        'core, train it before several devices, or restart Python.',
        ThreadBudgetWarning,
        stacklevel=3,
    )


def thread_budget(devices, per_device=None):
    """Let one CPU device use every core, and k devices a share each.

    Called by :func:`d2lpar.train_batch` (so by every trainer of the
    library) and cheap when nothing changes. GPU contexts are skipped.
    A worker is never raised above the fewest threads it has had in this
    process: MXNet caches each oneDNN operator (a convolution, a
    pooling) built for the thread count of that moment, and run later
    with more threads it writes past its buffers (a crash). Such a
    device keeps its count, with a warning once per device.

    Parameters
    ----------
    devices : list of mxnet.Context
        The devices about to train together.
    per_device : int, optional
        Threads for each device instead of the default. A model that
        calls ``np.dot`` (OpenBLAS) on several devices at once needs 1:
        the OpenMP build of OpenBLAS that MXNet's wheel ships shares its
        thread buffers between concurrent threaded calls, and two
        devices in threaded ``np.dot`` at once hang. LeNet's dense
        layers use oneDNN's product (:func:`d2lpar.model.dense`), which
        does not.

    Returns
    -------
    dict
        ``{context: threads}`` for each CPU context of ``devices``, as
        applied: ``max(1, total_threads() // k)`` each for k CPU
        contexts (:func:`d2lpar.threads.total_threads` for one), or
        fewer where a worker already ran with fewer.

    Raises
    ------
    ValueError
        If ``per_device`` is below 1.

    Examples
    --------
    On this book's 2-core machine:

    >>> import d2lpar as dp
    >>> dp.thread_budget(dp.devices(2))
    {cpu(0): 1, cpu(1): 1}
    """
    cpus = [d for d in devices if d.device_type == 'cpu']
    if not cpus:
        return {}
    if per_device is None:
        # Every core, shared: LeNet's dense layers run on oneDNN, which
        # several devices may thread at once (see the module docstring).
        per_device = max(1, total_threads() // len(cpus))
    elif per_device < 1:
        raise ValueError(
            f'thread_budget: per_device={per_device!r}; give at least 1'
        )
    openmp = _openmp()
    if openmp is None:  # not Linux, or an MXNet built without OpenMP
        if not _WARNED:  # once, not at every step
            _WARNED.append(True)
            warnings.warn(
                'thread_budget: no OpenMP runtime (libgomp) found in this '
                "process, so each CPU device keeps MXNet's default of one "
                'thread; training works, only slower on several cores',
                stacklevel=2,
            )
        return {ctx: 1 for ctx in cpus}
    for ctx in cpus:
        if ctx not in _LOWEST:  # first seen: all it ran, it ran at this
            _APPLIED[ctx] = _LOWEST[ctx] = worker_threads(ctx)
    budget = {ctx: min(per_device, _LOWEST[ctx]) for ctx in cpus}
    for ctx, threads in budget.items():
        if threads < per_device:
            _warn_kept(ctx, per_device)
    for ctx, threads in budget.items():
        if _APPLIED[ctx] != threads:
            _set_threads(ctx, threads)
    return budget
