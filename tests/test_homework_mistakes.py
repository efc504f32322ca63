"""d2lpar.homework.mistakes: the table of mistake codes and the buggy
implementations in the checks' tests cover each other."""

import test_homework_allreduce
import test_homework_averaging
import test_homework_evaluation
import test_homework_overlap
import test_homework_schedule
import test_homework_splitting
import test_homework_training

from d2lpar.homework import MISTAKES

# Each check's test file lists its bugs as (check, bug, code) rows.
BUG_TABLES = [
    test_homework_allreduce.BUGS,
    test_homework_averaging.BUGS,
    test_homework_evaluation.BUGS,
    test_homework_overlap.BUGS,
    test_homework_schedule.BUGS,
    test_homework_splitting.BUGS,
    test_homework_training.BUGS,
]


def test_every_code_has_a_buggy_implementation():
    """The table of mistakes and the bugs cover each other: a code nobody
    can trigger is dead, a bug without a code is undocumented (`raised`
    is every check's, tested by test_homework_report)."""
    tested = {code for bugs in BUG_TABLES for _, _, code in bugs}
    assert tested | {'raised'} == set(MISTAKES)
