"""The homework self-checks of solutions written in PyTorch.

``from d2lpar import torch as dp`` gives the same ``check_*`` names as
``import d2lpar as dp``; each runs the student's function on the same
battery of cases as the MXNet check and names the first mistake with the
same codes, its hint in PyTorch's terms. The cases, the judgement of
what came back, the report and the table of mistakes are the grader's
own, framework-neutral (:mod:`d2lpar.grading.battery`,
:mod:`d2lpar.grading.report`, :mod:`d2lpar.grading.mistakes`): only
making the tensors and reading them back is PyTorch's here.

Every assignment is graded in PyTorch (:data:`CHECKS`, by the function
a solution defines), on the MXNet check's cases: homework 1
(``tree_allreduce``, ``sharded_allreduce``; their sums and in-place
contract, not the elements each device moves: see
:func:`check_allreduce`), homework 2 (``ring_schedule``), homework 3
(``split_batch``, ``evaluate_accuracy_sharded``), homework 4
(``train_batch_accumulate``), homework 5 (``average_params``), homework
6 (``train_epoch``: the order of its calls and reads, see
:func:`check_train_epoch`) and the book's ``train_batch``.
"""

import sys

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ..grading import GRADED_BY
from ..grading.battery import (
    ASSIGNMENTS,
    StepKit,
    accumulation_cases,
    allreduce_cases,
    allreduce_shape,
    allreduce_values,
    average_case,
    average_cases,
    batch_values,
    calls_library,
    diagnose_sum,
    epoch_case,
    epoch_cases,
    evaluate_cases,
    evaluate_data,
    judge_accuracy,
    misplaced,
    results_elsewhere,
    schedule_case,
    schedule_cases,
    shaped_checks,
    shard_problem,
    split_case,
    split_cases,
    step_batch_values,
    train_case,
    train_cases,
)
from ..grading.report import StudentError, call, run_cases
from . import collectives
from .collectives import run_schedule
from .devices import same_place
from .model import get_params, init_lenet_params, lenet
from .training import train_batch

DTYPES = {'float32': torch.float32, 'float64': torch.float64}

# The twin's collectives a student's allreduce must not call: each of its
# allreduces (allreduce, sharded_allreduce, any added later) and, as in
# the MXNet check, run_schedule (a sharded_allreduce that only runs a
# schedule through it has not moved and added the chunks itself).
COLLECTIVES = {
    name: fn
    for name, fn in vars(collectives).items()
    if name.endswith('allreduce') and callable(fn)
}
COLLECTIVES['run_schedule'] = run_schedule


def make_devices(k):
    """The ``k`` devices a check runs on: always CPU labels.

    A check tests the algorithm, not the device: on CPU devices every
    case (float64 ones too: Apple's ``mps`` has no float64) runs on any
    machine, where :func:`d2lpar.torch.devices` would give one
    accelerator for ``k = 1`` and CPUs for more.
    """
    return [torch.device('cpu', i) for i in range(k)]


# Why the elements each device moves are not counted here.
NOT_COUNTED = (
    'the elements each device moves are not counted in PyTorch: k CPU '
    'devices are labels of the one CPU, so a copy between two of them '
    'cannot be seen; the MXNet check (import d2lpar as dp) counts them'
)


def make_inputs(case, seed=0):
    """One tensor per device, the devices, and the NumPy values they
    started with (:func:`d2lpar.grading.battery.allreduce_values`, as
    the MXNet check)."""
    devs = make_devices(case['k'])
    values = allreduce_values(case, seed)
    data = [
        torch.tensor(v, dtype=DTYPES[case['dtype']], device=d)
        for v, d in zip(values, devs)
    ]
    return data, devs, values


def _host(a):
    return a.detach().to('cpu').numpy()


def _is_tensor(a):
    return isinstance(a, torch.Tensor)


def _device(a):
    # A shard that is no tensor has no device: say what it is instead.
    return a.device if _is_tensor(a) else f'no device (a {type(a).__name__})'


def _same(a, b):
    return isinstance(a, torch.device) and same_place(a, b)


def diagnose(originals, devs, inputs, case, list_after, returned, mean=False):
    """Name what is wrong with an allreduce's (or averaging's) effect on
    tensors, or None if right: :func:`d2lpar.grading.battery.
    diagnose_sum` on their host values."""

    return diagnose_sum(
        [_host(a) for a in originals],
        inputs,
        case,
        results_elsewhere(originals, list_after, returned, _is_tensor),
        misplaced=misplaced(
            originals,
            lambda a: a.device,
            same_place,
            home=devs.__getitem__,
            noun='a tensor',
        ),
        host=_host,
        mean=mean,
    )


class LibraryCalls:
    """Within the block, record the twin's collectives that code outside
    ``d2lpar`` calls (however the student reached them: ``dp.allreduce``
    or ``from d2lpar.torch import allreduce``)."""

    def __init__(self):
        self.calls = []
        self._codes = {fn.__code__: name for name, fn in COLLECTIVES.items()}

    def _profile(self, frame, event, arg):
        if event == 'call' and frame.f_code in self._codes:
            caller = frame.f_back.f_globals.get('__name__', '')
            if not (caller == 'd2lpar' or caller.startswith('d2lpar.')):
                self.calls.append(self._codes[frame.f_code])
        if self._previous is not None:
            self._previous(frame, event, arg)

    def __enter__(self):
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._previous)


def _allreduce_case(fn, case):
    data, devs, inputs = make_inputs(case)
    originals, passed = list(data), data
    name = getattr(fn, '__name__', 'your allreduce')
    with LibraryCalls() as spy:
        returned = call(fn, passed)
    return calls_library(spy.calls, name) or diagnose(
        originals, devs, inputs, case, passed, returned
    )


def check_allreduce(fn, shape=None):
    """Check a student's PyTorch allreduce on k = 1..5 devices.

    Taught in :doc:`/book/allreduce`. The twin of
    :func:`d2lpar.check_allreduce`: ``fn(data)`` must behave like
    :func:`d2lpar.torch.allreduce`: ``data`` is a list of same-shape,
    same-dtype tensors, one per device; afterwards every ``data[i]`` (the
    caller's tensor, on its own device, in its own dtype) holds the
    elementwise sum, and it returns None, without calling the library's
    own ``allreduce`` (the ``calls-library`` mistake).

    Parameters
    ----------
    fn : callable
        The student's ``allreduce(data)``.
    shape : {None, 'tree', 'sharded'}, optional
        Accepted for the MXNet check's signature; the sum is checked as
        without it, and the report says that the elements each device
        moves were not counted (PyTorch's CPU devices are one device).

    Returns
    -------
    d2lpar.grading.report.Report
        ``bool(report)`` is True when every case passed; printing it
        names the first mistake, with the same codes as the MXNet check
        and hints in PyTorch's terms.

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> bool(dp.check_allreduce(dp.allreduce))
    True
    """
    allreduce_shape(shape)
    report = run_cases(
        'check_allreduce', fn, allreduce_cases(), _allreduce_case, 'torch'
    )
    if shape is not None:
        report.note = f'shape={shape!r}: {NOT_COUNTED}'
    return report


check_tree_allreduce, check_sharded_allreduce = shaped_checks(check_allreduce)


# ---------------------------------------------------------------- averaging


def _make_replicas(values, case):
    # Replicas as dp.get_params makes them (leaves that require
    # gradients), so that an in-place write outside torch.no_grad()
    # fails here as it would on the model's parameters.
    return [
        get_params(
            [torch.tensor(v, dtype=DTYPES[case['dtype']]) for v in vs], d
        )
        for vs, d in zip(values, make_devices(case['k']))
    ]


def _average_diagnose(originals, inputs, case, list_after):
    devs = make_devices(case['k'])
    return diagnose(originals, devs, inputs, case, list_after, None, True)


# What PyTorch says when a tensor that requires gradients is written in
# place outside torch.no_grad().
LEAF_WRITE = 'leaf Variable that requires grad'


def _average_case(fn, case):
    try:
        return average_case(fn, case, _make_replicas, _average_diagnose)
    except StudentError as e:
        if LEAF_WRITE not in str(e.error):
            raise
        error = RuntimeError(
            f'{e.error} (the replicas require gradients, as dp.get_params '
            f'makes them: write the averages inside `with torch.no_grad():`)'
        )
        raise StudentError(error, e.text) from e.error


def check_average_params(fn):
    """Check a student's PyTorch parameter averaging on k = 1..5
    replicas: the twin of :func:`d2lpar.check_average_params`.

    ``fn(device_params)`` must replace, in place, every replica's
    parameters by their mean over the replicas: afterwards each
    ``device_params[i][j]`` (the same tensor, on its device and in its
    dtype) holds ``sum_i device_params[i][j] / k``. It returns None.

    Returns
    -------
    d2lpar.grading.report.Report
    """
    return run_cases(
        'check_average_params', fn, average_cases(), _average_case, 'torch'
    )


# ---------------------------------------------------------------- split_batch


def _split_case(fn, case):
    devs = make_devices(case['k'])
    values, labels = batch_values(case['n'], case['feature'])
    X = torch.tensor(values, dtype=DTYPES[case['dtype']])
    y = torch.tensor(labels, dtype=torch.int64)

    problem = shard_problem(X, devs, _device, _same)
    return split_case(fn, case, X, y, devs, problem, _host)


def check_split_batch(fn):
    """Check a student's PyTorch split_batch on k = 1..5 devices: the
    twin of :func:`d2lpar.check_split_batch`.

    ``fn(X, y, devices)`` must behave like
    :func:`d2lpar.torch.split_batch`: return ``(X_shards, y_shards)``,
    one contiguous shard per device on that device, every example
    exactly once and in order, shard sizes differing by at most one, and
    raise ValueError when there are fewer examples than devices.

    Returns
    -------
    d2lpar.grading.report.Report

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> bool(dp.check_split_batch(dp.split_batch))
    True
    """
    return run_cases(
        'check_split_batch', fn, split_cases(), _split_case, 'torch'
    )


# ---------------------------------------------------------------- schedules


def _run_schedule(schedule, case):
    data, devs, inputs = make_inputs(case)
    originals = list(data)
    run_schedule(data, schedule)
    return diagnose(originals, devs, inputs, case, None, None)


def _schedule_case(fn, case):
    return schedule_case(fn, case, _run_schedule)


def check_ring_schedule(fn):
    """Check a student's ring allreduce schedule on k = 1..5 devices,
    run on PyTorch tensors: the twin of :func:`d2lpar.check_ring_schedule`
    (a schedule is the same list of :class:`d2lpar.comm.Transfer` in
    either framework).

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> from d2lpar.comm.schedules import ring_schedule
    >>> bool(dp.check_ring_schedule(ring_schedule))
    True
    """
    return run_cases(
        'check_ring_schedule', fn, schedule_cases(), _schedule_case, 'torch'
    )


# ---------------------------------------------------------------- evaluation


def _evaluate_case(fn, case):
    params = init_lenet_params(seed=case['k'], scale=0.1)
    devs = make_devices(case['k'])

    def predict(X):
        with torch.no_grad():
            return lenet(torch.from_numpy(X), params).argmax(dim=1).numpy()

    batches, right = evaluate_data(case, predict)
    batches = [(torch.from_numpy(X), torch.from_numpy(y)) for X, y in batches]
    device_params = [get_params(params, d) for d in devs]
    return judge_accuracy(call(fn, device_params, batches, devs), right, case)


def check_evaluate(fn):
    """Check a student's PyTorch multi-device accuracy on k = 1..5
    devices: the twin of :func:`d2lpar.check_evaluate`.

    ``fn(device_params, data_iter, devices)`` must split every batch
    over the devices, let device ``i`` score its shard with
    ``device_params[i]`` and LeNet (:func:`d2lpar.torch.lenet`), and
    return the fraction of correct predictions over all examples, as a
    float. Batches and shards of different sizes must count by their
    size.

    Returns
    -------
    d2lpar.grading.report.Report
    """
    return run_cases(
        'check_evaluate', fn, evaluate_cases(), _evaluate_case, 'torch'
    )


# ------------------------------------------------------------ training steps


def _batches(sizes, seed):
    return [
        (torch.from_numpy(X), torch.from_numpy(y))
        for X, y in step_batch_values(sizes, seed)
    ]


def _start(k, seed):
    params = init_lenet_params(seed=seed, scale=0.1)
    devs = make_devices(k)
    reference = get_params(params, make_devices(1)[0])
    return devs, [get_params(params, d) for d in devs], reference


def _one_device_step(params, X, y, lr):
    train_batch(X, y, [params], [params[0].device], lr)


def _values(params):
    return [_host(p).copy() for p in params]


def _fresh(values, X):
    return get_params([torch.from_numpy(v) for v in values], X.device)


# The twin's operations for the training-step checks, whose cases and
# judgement are the MXNet checks' (d2lpar.grading.battery.train_case,
# diagnose_step, epoch_case).
STEPS = StepKit(
    'torch',
    start=_start,
    batches=_batches,
    step=_one_device_step,
    values=_values,
    fresh=_fresh,
    place=_device,
    same=_same,
)


def check_train_batch(fn):
    """Check a student's PyTorch data-parallel SGD step on k = 1..5
    devices: the twin of :func:`d2lpar.check_train_batch`.

    ``fn(X, y, device_params, devices, lr)`` must behave like
    :func:`d2lpar.torch.train_batch`: after each call every replica
    ``device_params[i]`` (the same tensors, on ``devices[i]``) equals
    the parameters after one SGD step on the whole batch on one device.
    Three steps per case, on batches that do not divide evenly; a step
    that leaves last step's ``.grad`` in place (PyTorch's ``backward``
    adds into it) is ``stale-gradients``.

    Returns
    -------
    d2lpar.grading.report.Report

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> bool(dp.check_train_batch(dp.train_batch))
    True
    """
    return run_cases(
        'check_train_batch',
        fn,
        train_cases(),
        lambda f, c: train_case(f, c, STEPS),
        'torch',
    )


def check_grad_accumulation(fn):
    """Check a student's PyTorch gradient accumulation (homework 4) on
    k = 1..5 devices: the twin of :func:`d2lpar.check_grad_accumulation`.

    ``fn(X, y, device_params, devices, lr, accumulate=m)`` cuts the batch
    into ``m`` contiguous micro-batches (sizes differing by at most
    one), adds up their gradients on every device (PyTorch's
    ``backward`` adds into ``.grad``: zero it once per step, not per
    micro-batch), then takes one data-parallel SGD step: the replicas
    must equal one SGD step on the whole batch on one device.

    Returns
    -------
    d2lpar.grading.report.Report
    """
    return run_cases(
        'check_grad_accumulation',
        fn,
        accumulation_cases(),
        lambda f, c: train_case(f, c, STEPS, c['m']),
        'torch',
    )


# ------------------------------------------------------------------ overlap
#
# MXNet queues work and returns at once, so its check puts a gate in the
# engine behind every number. PyTorch on the CPU computes each operator
# before it returns (on a GPU, CUDA queues kernels the same way MXNet
# does): what is graded is the loop's order, which is the same on either
# device. train_batch's numbers are handed to the student as _Numbers,
# which tell the case's InFlight when Python reads them (.item(),
# float(), .tolist(), .numpy(), printing; .cpu() or .to() of a GPU
# tensor), through whatever sums or stacks of them the student makes;
# torch.cuda.synchronize() reads every step queued so far, as MXNet's
# npx.waitall() does.

_WATCHING = []  # the _Watch of the case running now

_READS = {
    getattr(torch.Tensor, name)
    for name in (
        'item',
        'tolist',
        'numpy',
        '__array__',
        '__float__',
        '__int__',
        '__bool__',
        '__index__',
        '__complex__',
        '__format__',
        '__repr__',
    )
}
_COPIES = {torch.Tensor.cpu, torch.Tensor.to}


def _plain(a):
    return a.as_subclass(torch.Tensor) if isinstance(a, _Numbers) else a


class _Numbers(torch.Tensor):
    """A number of train_batch (or a sum of such numbers) that records,
    while a check watches, when the student's code reads it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        steps = set()
        for a in tree_flatten((args, kwargs))[0]:
            if isinstance(a, _Numbers):
                steps |= getattr(a, '_steps', frozenset())
        out = func(*tree_map(_plain, args), **tree_map(_plain, kwargs))
        if _WATCHING and steps and _is_read(func, args, out):
            for step in sorted(steps):
                _WATCHING[-1].order.read(step)
        return tree_map(lambda o: _numbers(o, steps), out)


def _numbers(a, steps):
    """``a`` as _Numbers of ``steps`` (anything else: as it is)."""
    if type(a) is not torch.Tensor:
        return a
    a = a.as_subclass(_Numbers)
    a._steps = frozenset(steps)
    return a


def _is_read(func, args, out):
    if func in _READS:
        return True
    # A copy to the CPU waits for a GPU's result; on the CPU it is none.
    return (
        func in _COPIES
        and isinstance(out, torch.Tensor)
        and out.device.type == 'cpu'
        and args[0].device.type != 'cpu'
    )


class _Watch:
    """While active: ``dp.train_batch`` (``d2lpar.torch``'s) returns
    watched numbers and tells ``order`` of each call;
    ``torch.cuda.synchronize`` reads every step called so far."""

    def __init__(self, order):
        self.order, self.real, self.saved = order, [], []

    def _train_batch(self, original):
        def train_batch(*args, **kwargs):
            i = self.order.call()
            losses, corrects = original(*args, **kwargs)
            self.real.append((losses, corrects))
            self.order.returned(i)
            return (
                [_numbers(a, {i}) for a in losses],
                [_numbers(a, {i}) for a in corrects],
            )

        return train_batch

    def _synchronize(self, original):
        def synchronize(*args, **kwargs):
            for step in range(self.order.calls):
                self.order.read(step)
            return original(*args, **kwargs)

        return synchronize

    def __enter__(self):
        from .. import torch as package
        from . import training

        _WATCHING.append(self)
        for owner in (package, training):
            self._swap(owner, 'train_batch', self._train_batch)
        self._swap(torch.cuda, 'synchronize', self._synchronize)
        return self

    def _swap(self, owner, name, make):
        original = getattr(owner, name)
        self.saved.append((owner, name, original))
        setattr(owner, name, make(original))

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        _WATCHING.remove(self)


def check_train_epoch(fn):
    """Check a student's PyTorch epoch that keeps two steps in flight
    (homework 6): the twin of :func:`d2lpar.check_train_epoch`.

    ``fn(train_iter, device_params, devices, lr)`` runs
    :func:`d2lpar.torch.train_batch` (as ``dp.train_batch``) on every
    batch of ``train_iter`` and returns ``(mean_loss, accuracy)`` over
    the epoch's examples, as Python floats. It reads each step's numbers
    (``.item()``) only after it has queued the next step: reading them
    at once is ``synced-every-batch``, calling step ``i + 2`` before any
    of step ``i``'s numbers was read is ``too-far-ahead``. The replicas
    must equal plain SGD over the same batches on one device.

    On the CPU PyTorch computes each step before ``train_batch``
    returns, so nothing overlaps there. On a GPU CUDA queues the step's
    kernels, but :func:`d2lpar.torch.split_batch`'s blocking ``.to``
    waits for the work queued before it, so the order graded lets the
    GPU compute step ``i + 1`` while Python reads step ``i``'s numbers
    and loads the next batch, and no more (homework 6 says why).

    Returns
    -------
    d2lpar.grading.report.Report
    """
    return run_cases(
        'check_train_epoch',
        fn,
        epoch_cases(),
        lambda f, c: epoch_case(f, c, STEPS, _Watch),
        'torch',
    )


# Function name a solution file defines -> the check that grades it in
# PyTorch (the MXNet table's names: d2lpar.grading.GRADED_BY).
CHECKS = {fn: globals()[check] for fn, check in GRADED_BY.items()}

# What ``from d2lpar import torch as dp`` exports of this module: the
# self-checks, by the names of the MXNet ones.
__all__ = list(ASSIGNMENTS)
