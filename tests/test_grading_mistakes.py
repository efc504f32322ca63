"""d2lpar.grading.mistakes: the table of mistake codes and the buggy
implementations in the checks' tests cover each other."""

import test_grading_allreduce
import test_grading_averaging
import test_grading_evaluation
import test_grading_overlap
import test_grading_schedule
import test_grading_splitting
import test_grading_training

from d2lpar.grading import MISTAKES

# Each check's test file lists its bugs as (check, bug, code) rows.
BUG_TABLES = [
    test_grading_allreduce.BUGS,
    test_grading_averaging.BUGS,
    test_grading_evaluation.BUGS,
    test_grading_overlap.BUGS,
    test_grading_schedule.BUGS,
    test_grading_splitting.BUGS,
    test_grading_training.BUGS,
]


def test_every_code_has_a_buggy_implementation():
    """The table of mistakes and the bugs cover each other: a code nobody
    can trigger is dead, a bug without a code is undocumented (`raised`
    is every check's, tested by test_grading_report)."""
    tested = {code for bugs in BUG_TABLES for _, _, code in bugs}
    assert tested | {'raised'} == set(MISTAKES)
