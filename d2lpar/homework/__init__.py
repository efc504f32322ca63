"""Self-checks for homework: run a student's function, name the mistake.

Each ``check_*`` runs the student's function, with the library's
signature, on a battery of cases (k = 1..5 devices, arrays smaller than
and not divisible by k, float32 and float64, uneven batches, several
steps) against the library's reference, and returns a :class:`Report`::

    import d2lpar as dp
    report = dp.check_allreduce(my_allreduce)
    report            # in a notebook: first failing case and a hint
    assert report     # in a test: True only when every case passed

The mistake codes and their hints live in one table,
:data:`d2lpar.homework.mistakes.MISTAKES`. ``python -m d2lpar check
solution.py`` runs the check of every function of :data:`CHECKS` that a
file defines.
"""

from .allreduce import (
    check_allreduce,
    check_sharded_allreduce,
    check_tree_allreduce,
)
from .averaging import check_average_params
from .evaluation import check_evaluate
from .mistakes import MISTAKES
from .overlap import check_train_epoch
from .report import Failure, Report
from .schedule import check_ring_schedule
from .splitting import check_split_batch
from .training import check_grad_accumulation, check_train_batch

# Function name a solution file defines -> the check that grades it.
CHECKS = {
    'allreduce': check_allreduce,
    'tree_allreduce': check_tree_allreduce,
    'sharded_allreduce': check_sharded_allreduce,
    'ring_allreduce': check_allreduce,
    'ring_schedule': check_ring_schedule,
    'split_batch': check_split_batch,
    'evaluate_accuracy_sharded': check_evaluate,
    'train_batch': check_train_batch,
    'train_batch_accumulate': check_grad_accumulation,
    'average_params': check_average_params,
    'train_epoch': check_train_epoch,
}

__all__ = [
    'CHECKS',
    'Failure',
    'MISTAKES',
    'Report',
    'check_allreduce',
    'check_average_params',
    'check_evaluate',
    'check_grad_accumulation',
    'check_ring_schedule',
    'check_sharded_allreduce',
    'check_split_batch',
    'check_train_batch',
    'check_tree_allreduce',
    'check_train_epoch',
]
