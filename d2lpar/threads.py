"""How many cores each CPU device may use: one device all, k devices a share.

MXNet runs the operators of each CPU context on that context's own
worker thread, and each operator (a convolution, a matrix product)
splits its work over as many OpenMP threads as that worker thread's
OpenMP setting allows. MXNet starts every worker at one thread, so by
default one device uses one core however many the machine has, and "two
devices vs one" compares two cores with one.

:func:`thread_budget` gives one CPU device every core and k >= 2 CPU
devices one thread each: on this book's 2-core machine, all of it either
way. MXNet has no per-context setting for this (``OMP_NUM_THREADS`` is
read once, for all threads, and ``MXSetNumOMPThreads`` only sets the
calling thread), so the budget is applied where it takes effect: a tiny
operation pushed to each device's worker thread through MXNet's engine
(``MXEnginePushSync``) calls OpenMP's ``omp_set_num_threads`` there.

Why k devices do not get ``cores // k`` threads each, and why not simply
set ``OMP_NUM_THREADS``: two CPU contexts would then run OpenBLAS's
threaded matrix product (``np.dot``) at the same time, and the OpenMP
build of OpenBLAS that MXNet's wheel ships shares its thread buffers
between concurrent threaded calls: both callers spin in ``exec_blas``
forever (seen in a debugger; this is the "2 contexts + OMP_NUM_THREADS=2
hangs" trap). One thread per device never calls the threaded product,
and ``tests/test_threads.py`` runs the trap's setting under the budget.
On a machine with more cores than devices this leaves cores idle.

A worker's threads may go down but never up again. MXNet builds each
oneDNN operator (a convolution, a pooling) once per worker and input
shape, for the thread count of that moment, and caches it. Run later with
more threads, the cached operator writes past its buffers: training one
device after two in the same process crashed with a segmentation fault,
or glibc's "corrupted double-linked list", in 3 of 3 runs here (``gdb``:
in ``MKLDNNConvolutionForwardFullFeature``), while going from two
threads to one never did. MXNet offers no way to empty that cache, so
:func:`thread_budget` never raises a worker above the fewest threads it
has had, and says so once per device. Since MXNet starts every worker at
one thread, ``import d2lpar`` gives ``cpu(0)``, the device that trains
alone, every core before anything runs on it (:func:`claim_every_core`).

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
import threading
import warnings

import mxnet as mx

# The threads each context's worker has now, as set or first seen here
# (MXNet starts every worker at 1 unless OMP_NUM_THREADS says otherwise).
_APPLIED = {}
# The fewest threads each worker has had: never raised above (docstring).
_LOWEST = {}
# Contexts already warned about keeping fewer threads than asked.
_KEPT_WARNED = set()
# Non-empty once the "no OpenMP" warning was given.
_WARNED = []


class ThreadBudgetWarning(UserWarning):
    """A CPU device keeps fewer threads than asked (see the docstring).

    Its own category so that code which knows its speed does not matter
    (a check's reference computation) can silence just this warning.
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


def _engine_restarted_in_parent():
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


def _engine_restarted_in_child():
    """In a forked child, MXNet's workers are new: forget the budget.

    No MXNet call here (the child may be about to ``exec``); the child
    starts from MXNet's default and never goes above it.
    """
    for ctx in list(_APPLIED):
        _APPLIED[ctx] = _LOWEST[ctx] = mxnet_default_threads()


# Python runs these on os.fork(), multiprocessing's fork start and
# subprocess with preexec_fn: the cases where MXNet's handlers run too.
os.register_at_fork(
    after_in_parent=_engine_restarted_in_parent,
    after_in_child=_engine_restarted_in_child,
)


def claim_every_core(ctx):
    """Give ``ctx``'s worker every core before it runs any operator.

    :func:`thread_budget` never raises a worker above the fewest threads
    it has had (see the module docstring), and a worker MXNet starts runs
    at one thread, so a device could never get every core. ``import
    d2lpar`` calls this for ``cpu(0)``, the device that trains alone;
    the benchmarks call it for a context they use for nothing else.

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


def mxnet_default_threads():
    """The threads MXNet starts each worker with: OMP_NUM_THREADS, or 1."""
    value = os.environ.get('OMP_NUM_THREADS', '').split(',')[0].strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1


def share_cores(num_processes, ctx=None):
    """Lower ``ctx``'s worker to its process's share of the cores.

    For a process that is one of ``num_processes`` training on this
    machine at once (the workers of a multi-process job): every process
    imports ``d2lpar``, which gives ``cpu(0)`` every core, and k
    processes each running every core's OpenMP threads on the same cores
    wait for each other at the end of every operator. Two workers with
    two threads each on this 2-core machine took 600-1700 ms per step
    instead of 23-25 ms with one thread each (measured side by side).

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
    ctx = ctx or mx.cpu(0)
    if os.environ.get('OMP_NUM_THREADS'):
        share = mxnet_default_threads()  # the user's choice, per process
    else:
        share = max(1, available_cores() // num_processes)
    return thread_budget([ctx], per_device=share)[ctx]


def _warn_kept(ctx, wanted):
    """Say once per context why it keeps fewer threads than asked for."""
    if ctx in _KEPT_WARNED:
        return
    _KEPT_WARNED.add(ctx)
    warnings.warn(
        f'thread_budget: {ctx} keeps {_LOWEST[ctx]} thread(s) instead of '
        f'{wanted}: its worker already ran with {_LOWEST[ctx]}, and '
        "MXNet's oneDNN operators, cached per shape on each worker, "
        'crash when run with more threads than they were built for. '
        'Training is correct, only slower. To give one device every '
        'core, train it before several devices, or restart Python.',
        ThreadBudgetWarning,
        stacklevel=3,
    )


def thread_budget(devices, per_device=None):
    """Let one CPU device use every core, and k devices one thread each.

    Called by :func:`d2lpar.train_batch` (so by every trainer of the
    library) and cheap when nothing changes. GPU contexts are skipped.
    A worker is never raised above the fewest threads it has had in this
    process (a crash otherwise, see the module docstring): such a device
    keeps its count, with a warning once per device.

    Parameters
    ----------
    devices : list of mxnet.Context
        The devices about to train together.
    per_device : int, optional
        Threads for each device instead of the default. More than one
        is allowed only for a single device.

    Returns
    -------
    dict
        ``{context: threads}`` for each CPU context of ``devices``, as
        applied: :func:`total_threads` for a single CPU context, 1 each
        for several, or fewer where a worker already ran with fewer.

    Raises
    ------
    ValueError
        If ``per_device`` is below 1, or above 1 for several devices.

    Examples
    --------
    >>> import d2lpar as dp
    >>> dp.thread_budget(dp.devices(2))
    {cpu(0): 1, cpu(1): 1}
    """
    cpus = [d for d in devices if d.device_type == 'cpu']
    if not cpus:
        return {}
    if per_device is None:
        # More than one thread per device only when no other device can
        # call OpenBLAS at the same time (see the module docstring).
        per_device = total_threads() if len(cpus) == 1 else 1
    elif per_device < 1 or (per_device > 1 and len(cpus) > 1):
        raise ValueError(
            f'thread_budget: per_device={per_device!r} for {len(cpus)} '
            'CPU device(s); give at least 1, and more than 1 only to a '
            'single device (two threaded OpenBLAS calls hang, see '
            "d2lpar.threads' docstring)"
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
    if all(_APPLIED[ctx] == n for ctx, n in budget.items()):
        return budget
    if max(budget.values()) > 1:
        # At most one context may hold several threads at a time: lower
        # every other first. run_on_worker waits for that context's
        # queued work, so two threaded products never overlap even when
        # one device per call is trained in turn.
        for ctx, threads in list(_APPLIED.items()):
            if threads > 1 and ctx not in budget:
                _set_threads(ctx, 1)
    for ctx, threads in budget.items():
        _set_threads(ctx, threads)
    return budget
