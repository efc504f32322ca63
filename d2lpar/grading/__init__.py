"""The grader: run a student's function, name the mistake.

Each ``check_*`` runs the student's function, with the library's
signature, on a battery of cases (k = 1..5 devices, arrays smaller than
and not divisible by k, float32 and float64, uneven batches, several
steps) against the library's reference, and returns a :class:`Report`::

    import d2lpar as dp
    report = dp.check_allreduce(my_allreduce)
    report            # in a notebook: first failing case and a hint
    assert report     # in a test: True only when every case passed

The mistake codes and their hints live in one table,
:data:`MISTAKES` (:mod:`d2lpar.grading.mistakes`). ``python -m d2lpar check
solution.py`` runs the check of every function of :data:`CHECKS` that a
file defines (of :data:`d2lpar.torch.grading.CHECKS` for a file that
imports PyTorch).

The report (:mod:`d2lpar.grading.report`), the table of mistakes
(:mod:`d2lpar.grading.mistakes`), the cases and the judgement of what a
student's function did (:mod:`d2lpar.grading.battery`) and the reading
of a solution's framework (:mod:`d2lpar.grading.detect`) are
framework-neutral: they import neither MXNet nor PyTorch, and this
package imports a check (which runs MXNet) only the first time one is
used, so the PyTorch checks (:mod:`d2lpar.torch.grading`) run the same
cases and report with the same classes, codes and hints (in PyTorch's
terms). Every name below is reached as ``dp.grading.NAME``.
"""

import importlib

from .mistakes import MISTAKES
from .report import Failure, Report

# The checks run MXNet: each is imported on first use (PEP 562), so the
# report and the mistake table above can be imported without MXNet.
# name -> module of this package that defines it.
_CHECKS_IN = {
    'check_allreduce': 'allreduce',
    'check_sharded_allreduce': 'allreduce',
    'check_tree_allreduce': 'allreduce',
    'check_average_params': 'averaging',
    'check_evaluate': 'evaluation',
    'check_train_epoch': 'overlap',
    'check_ring_schedule': 'schedule',
    'check_split_batch': 'splitting',
    'check_grad_accumulation': 'training',
    'check_train_batch': 'training',
    'Spy': 'spy',
}

# Function name a solution file defines -> the check that grades it.
GRADED_BY = {
    'allreduce': 'check_allreduce',
    'tree_allreduce': 'check_tree_allreduce',
    'sharded_allreduce': 'check_sharded_allreduce',
    'ring_allreduce': 'check_allreduce',
    'ring_schedule': 'check_ring_schedule',
    'split_batch': 'check_split_batch',
    'evaluate_accuracy_sharded': 'check_evaluate',
    'train_batch': 'check_train_batch',
    'train_batch_accumulate': 'check_grad_accumulation',
    'average_params': 'check_average_params',
    'train_epoch': 'check_train_epoch',
}


def __getattr__(name):
    """A check (or ``CHECKS``, the table of them) on its first use."""
    if name == 'CHECKS':
        value = {fn: __getattr__(check) for fn, check in GRADED_BY.items()}
    elif name in _CHECKS_IN:
        module = importlib.import_module(f'.{_CHECKS_IN[name]}', __name__)
        value = getattr(module, name)
    else:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_CHECKS_IN) | {'CHECKS'})


__all__ = [
    'CHECKS',
    'Failure',
    'GRADED_BY',
    'MISTAKES',
    'Report',
    *sorted(_CHECKS_IN),
]
