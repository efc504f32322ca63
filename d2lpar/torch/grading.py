"""The homework self-check of an allreduce written in PyTorch.

:func:`check_allreduce` runs a student's ``allreduce(data)`` on the same
battery of cases as :func:`d2lpar.check_allreduce` (k = 1..5 devices;
arrays smaller than, not divisible by, and a multiple of k; float32 and
float64) and names the first mistake with the same codes and hints: the
report, the case runner and the table of mistakes are the grader's own,
framework-neutral (:mod:`d2lpar.grading.report`,
:mod:`d2lpar.grading.mistakes`); only making the tensors and reading
them back is PyTorch's here.
"""

import sys

import numpy as onp
import torch

from ..grading.report import call, run_cases, show
from . import collectives
from .devices import devices as make_devices
from .devices import same_place

# Tolerances per dtype: float64 results must keep float64's precision,
# which is how a sum computed in float32 is caught.
RTOL = {'float32': 1e-5, 'float64': 1e-12}
DTYPES = {'float32': torch.float32, 'float64': torch.float64}

# The twin's collectives a student's allreduce must not call.
COLLECTIVES = {'allreduce': collectives.allreduce}


def allreduce_cases():
    """k = 1..5 devices; sizes below, not divisible by, and a multiple of
    k; float32 and float64; one 2-D shape: the cases of
    :func:`d2lpar.grading.allreduce.allreduce_cases`, in its order."""
    cases = []
    for k in range(1, 6):
        for shape in [(max(k - 1, 1),), (2 * k + 1,), (3, 2 * k)]:
            for dtype in ('float32', 'float64'):
                size = int(onp.prod(shape))
                cases.append(
                    {
                        'k': k,
                        'shape': shape,
                        'dtype': dtype,
                        'what': f'k={k} devices, shape {shape} '
                        f'({size} element{"s" if size > 1 else ""}), '
                        f'{dtype}',
                    }
                )
    return cases


def make_inputs(case, seed=0):
    """One tensor per device, and the NumPy values they started with;
    float64 values that float32 cannot hold (as MXNet's check)."""
    rng = onp.random.default_rng(seed + case['k'])
    devs = make_devices(case['k'])
    values = [rng.integers(1, 9, case['shape']) for _ in devs]
    if case['dtype'] == 'float64':
        values = [v + 1e-9 * (i + 1) for i, v in enumerate(values)]
    values = [onp.asarray(v, dtype=case['dtype']) for v in values]
    data = [
        torch.tensor(v, dtype=DTYPES[case['dtype']], device=d)
        for v, d in zip(values, devs)
    ]
    return data, devs, values


def _host(a):
    return a.detach().to('cpu').numpy()


def _close(got, want, dtype):
    return got.shape == want.shape and onp.allclose(
        got, want, rtol=RTOL[dtype], atol=0
    )


def diagnose_sum(originals, devs, inputs, case, list_after, returned):
    """Name what is wrong with an allreduce's effect, or None if right
    (the decisions of :func:`d2lpar.grading.allreduce.diagnose_sum`).
    """
    dtype, k = case['dtype'], len(inputs)
    total = onp.sum(onp.stack(inputs).astype('float64'), axis=0)
    got = [_host(a) for a in originals]
    if all(_close(g, total, dtype) for g in got):
        return None
    expect = f'expected every array = {show(total)}'
    elsewhere = [
        (i, a) for i, a in enumerate(list_after) if a is not originals[i]
    ]
    if isinstance(returned, (list, tuple)):
        elsewhere += list(enumerate(returned))[:k]
    elif isinstance(returned, torch.Tensor):
        elsewhere.append((0, returned))
    elsewhere = [(i, a) for i, a in elsewhere if isinstance(a, torch.Tensor)]
    for i, a in elsewhere:
        if not same_place(a.device, devs[i]):
            return (
                'changed-device',
                f'data[{i}] was replaced by a tensor on {a.device}, but '
                f'the input lived on {devs[i]}',
            )
        if a.dtype != originals[i].dtype:
            return (
                'changed-dtype',
                f'data[{i}] was replaced by a {a.dtype} tensor; the '
                f'input was {originals[i].dtype}',
            )
    for i, a in elsewhere:
        if _close(_host(a), total, dtype):
            return (
                'not-in-place',
                f'{expect}; the result is in a new tensor (data[{i}] '
                f"rebound or returned), but the caller's data[{i}] still "
                f'holds {show(got[i])}',
            )
    if k > 1 and all(_close(g, v, dtype) for g, v in zip(got, inputs)):
        return (
            'did-nothing',
            f'{expect}; got the inputs back unchanged, e.g. data[1] = '
            f'{show(got[1])}',
        )
    if k > 1 and all(_close(g, total / k, dtype) for g in got):
        return 'averaged', f'{expect}; got {show(got[0])}'
    if dtype == 'float64' and all(_close(g, total, 'float32') for g in got):
        err = max(float(onp.abs(g - total).max()) for g in got)
        return (
            'changed-dtype',
            f'{expect}; got it only to float32 precision (off by up to '
            f'{err:.2g})',
        )
    right = [i for i, g in enumerate(got) if _close(g, total, dtype)]
    wrong = [i for i in range(k) if i not in right]
    if right and all(_close(got[i], inputs[i], dtype) for i in wrong):
        return (
            'not-broadcast',
            f'{expect}; devices {right} hold it but data[{wrong[0]}] '
            f'still holds its input {show(got[wrong[0]])}',
        )
    return 'wrong-sum', f'{expect}; got data[0] = {show(got[0])}'


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
    if spy.calls:
        return (
            'calls-library',
            f"{name} calls d2lpar's {spy.calls[0]} (dp.{spy.calls[0]}) "
            f'instead of moving and adding the tensors itself',
        )
    return diagnose_sum(originals, devs, inputs, case, passed, returned)


def check_allreduce(fn):
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

    Returns
    -------
    d2lpar.grading.report.Report
        ``bool(report)`` is True when every case passed; printing it
        names the first mistake, with the same codes and hints as the
        MXNet check.

    Examples
    --------
    >>> from d2lpar import torch as dp
    >>> bool(dp.check_allreduce(dp.allreduce))
    True
    """
    return run_cases('check_allreduce', fn, allreduce_cases(), _allreduce_case)
