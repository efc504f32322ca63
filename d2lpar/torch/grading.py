"""The homework self-checks of solutions written in PyTorch.

``from d2lpar import torch as dp`` gives the same ``check_*`` names as
``import d2lpar as dp``; each runs the student's function on the same
battery of cases as the MXNet check and names the first mistake with the
same codes, its hint in PyTorch's terms. The cases, the judgement of
what came back, the report and the table of mistakes are the grader's
own, framework-neutral (:mod:`d2lpar.grading.battery`,
:mod:`d2lpar.grading.report`, :mod:`d2lpar.grading.mistakes`): only
making the tensors and reading them back is PyTorch's here.

What is graded in PyTorch (:data:`CHECKS`, by the function a solution
defines): homework 1 (``tree_allreduce``, ``sharded_allreduce``; their
sums and in-place contract, not the elements each device moves: see
:func:`check_allreduce`), homework 2 (``ring_schedule``), homework 3
(``split_batch``, ``evaluate_accuracy_sharded``) and homework 5
(``average_params``). Homework 4 (``train_batch_accumulate``), homework
6 (``train_epoch``) and the book's ``train_batch`` have no PyTorch check
yet: their ``check_*`` here return a report that says so and does not
pass.
"""

import sys

import torch

from ..grading import GRADED_BY
from ..grading.battery import (
    ASSIGNMENTS,
    allreduce_cases,
    allreduce_shape,
    allreduce_values,
    average_case,
    average_cases,
    batch_values,
    calls_library,
    diagnose_sum,
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
)
from ..grading.report import Report, call, run_cases
from ..splitting import shard_ranges
from . import collectives
from .devices import devices as make_devices
from .devices import same_place
from .model import get_params, init_lenet_params, lenet

DTYPES = {'float32': torch.float32, 'float64': torch.float64}

# The twin's collectives a student's allreduce must not call.
COLLECTIVES = {'allreduce': collectives.allreduce}

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
    return [
        [torch.tensor(v, dtype=DTYPES[case['dtype']], device=d) for v in vs]
        for vs, d in zip(values, make_devices(case['k']))
    ]


def _average_diagnose(originals, inputs, case, list_after):
    devs = make_devices(case['k'])
    return diagnose(originals, devs, inputs, case, list_after, None, True)


def _average_case(fn, case):
    return average_case(fn, case, _make_replicas, _average_diagnose)


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


def run_schedule(data, schedule):
    """Run an allreduce schedule on tensors, one per device, in place:
    :func:`d2lpar.run_schedule`'s meaning (each :class:`~d2lpar.comm.
    Transfer` copies a chunk, or the whole array, to another device,
    which adds it to its own or is overwritten by it; the additions of
    a step are all received before any is added)."""
    flats = [a.view(-1) for a in data]
    n = flats[0].numel()
    bounds = [slice(a, b) for a, b in shard_ranges(n, len(data))]
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


# ------------------------------------------------- no PyTorch check yet


def _not_graded(check):
    def not_graded(fn):
        return Report(
            check,
            getattr(fn, '__name__', repr(fn)),
            0,
            [],
            'torch',
            unsupported=(
                f'{ASSIGNMENTS[check]} has no PyTorch check yet (PyTorch '
                f'checks exist for {", ".join(GRADED)}); write it with '
                f'import d2lpar as dp (MXNet) to have it graded'
            ),
        )

    not_graded.__name__ = not_graded.__qualname__ = check
    not_graded.__doc__ = (
        f'No PyTorch check of {ASSIGNMENTS[check]} exists yet: returns a '
        f'report that says so and does not pass.'
    )
    return not_graded


check_grad_accumulation = _not_graded('check_grad_accumulation')
check_train_batch = _not_graded('check_train_batch')
check_train_epoch = _not_graded('check_train_epoch')

# Function name a solution file defines -> the check that grades it in
# PyTorch (the MXNet table's names: d2lpar.grading.GRADED_BY).
CHECKS = {fn: globals()[check] for fn, check in GRADED_BY.items()}
NOT_GRADED = (
    'check_grad_accumulation',
    'check_train_batch',
    'check_train_epoch',
)
# The functions a PyTorch solution has graded.
GRADED = [fn for fn, check in GRADED_BY.items() if check not in NOT_GRADED]

# What ``from d2lpar import torch as dp`` exports of this module: the
# self-checks, by the names of the MXNet ones.
__all__ = list(ASSIGNMENTS)
