"""d2lpar.grading.averaging: check_average_params passes the reference
and names each mistake a student's parameter averaging makes."""

import pytest
from conftest import assert_names_only, assert_passes, bug_ids

import d2lpar as dp
from d2lpar.grading import reference


def avg_sums(device_params):
    for j in range(len(device_params[0])):
        dp.allreduce([p[j] for p in device_params])


def avg_rebinds(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        for p in device_params:
            p[j] = (total / k).copyto(p[j].ctx)


def avg_first_only(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        device_params[0][j][:] = total / k


def avg_one_device(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(
            p[j].copyto(device_params[0][j].ctx) for p in device_params
        )
        for p in device_params[1:]:
            p[j] = total / k
        device_params[0][j][:] = total / k


def avg_by_k_plus_one(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        dp.allreduce([p[j] for p in device_params])
        for p in device_params:
            p[j][:] = p[j] / (k + 1)


BUGS = [
    (dp.check_average_params, avg_sums, 'summed'),
    (dp.check_average_params, avg_rebinds, 'not-in-place'),
    (dp.check_average_params, avg_first_only, 'not-broadcast'),
    (dp.check_average_params, avg_one_device, 'changed-device'),
    (dp.check_average_params, avg_by_k_plus_one, 'wrong-mean'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy averaging fails, and every failing case names exactly
    the mistake it makes."""
    assert_names_only(check, bug, code)


def test_reference_passes():
    """The homework's reference average_params passes every case."""
    assert_passes(dp.check_average_params, reference.average_params)
