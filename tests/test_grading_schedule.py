"""d2lpar.grading.schedule: check_ring_schedule passes the library's
ring schedule and names each mistake a student's schedule makes."""

import pytest
from conftest import assert_names_only, assert_passes, bug_ids, stub_none

import d2lpar as dp
from d2lpar.comm.schedules import Transfer, naive_schedule, ring_schedule


def ring_tuples(k):
    return [[(i, (i + 1) % k) for i in range(k)]] if k > 1 else [[(0, 0)]]


def ring_chain_whole(k):
    # Pass the whole array along the chain, then back around: k-1 + k-1
    # steps, but every middle device moves 2 N bytes.
    up = [[Transfer(i, i + 1, None, True)] for i in range(k - 1)]
    down = [
        [Transfer((k - 1 + i) % k, i % k, None, False)] for i in range(k - 1)
    ]
    return up + [[t for t in step] for step in down]


def ring_one_per_step(k):
    return [[t] for step in ring_schedule(k) for t in step]


def ring_gather_off_by_one(k):
    # The all-gather sends the chunk it has just received, one too early.
    reduce_scatter = ring_schedule(k)[: k - 1]
    all_gather = [
        [Transfer(i, (i + 1) % k, (i - s) % k, False) for i in range(k)]
        for s in range(k - 1)
    ]
    return reduce_scatter + all_gather


BUGS = [
    (dp.check_ring_schedule, ring_tuples, 'not-a-schedule'),
    (dp.check_ring_schedule, naive_schedule, 'not-a-ring'),
    (dp.check_ring_schedule, ring_chain_whole, 'too-much-traffic'),
    (dp.check_ring_schedule, ring_one_per_step, 'too-many-steps'),
    (dp.check_ring_schedule, ring_gather_off_by_one, 'wrong-sum'),
    (dp.check_ring_schedule, stub_none, 'bad-return'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy schedule fails, and every failing case names exactly
    the mistake it makes."""
    assert_names_only(check, bug, code)


def test_reference_passes():
    """The library's ring schedule passes every case."""
    assert_passes(dp.check_ring_schedule, ring_schedule)
