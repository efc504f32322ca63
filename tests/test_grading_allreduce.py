"""d2lpar.grading.allreduce: check_allreduce, check_tree_allreduce and
check_sharded_allreduce pass the references and name each mistake.

Each buggy implementation below makes one mistake a student makes; its
test fails if the check stops naming that mistake (and only it).
"""

import pytest
from conftest import (
    assert_names_only,
    assert_passes,
    bug_ids,
    stub_none,
    tree_allreduce,
)
from mxnet import np

import d2lpar as dp
from d2lpar.grading import check_sharded_allreduce, check_tree_allreduce


def ar_rebinds(data):
    total = sum(a.copyto(data[0].ctx) for a in data)
    for i in range(len(data)):
        data[i] = total.copyto(data[i].ctx)


def ar_reduce_only(data):
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)


def ar_gather(data):
    # Correct sum, gathered on device 0: the library's naive allreduce.
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def ar_mean(data):
    ar_gather(data)
    for a in data:
        a[:] = a / len(data)


def ar_wraps_tree(data):
    # The right sum, and no tree: the library does the work.
    dp.allreduce(data)


def ar_neighbour(data):
    # Each device adds its neighbour's array: right for 2 devices only.
    k = len(data)
    new = [data[i] + data[(i + 1) % k].copyto(data[i].ctx) for i in range(k)]
    for a, b in zip(data, new):
        a[:] = b


def ar_one_device(data):
    total = sum(a.copyto(data[0].ctx) for a in data)
    for i in range(1, len(data)):
        data[i] = total


def ar_float32(data):
    total = np.zeros(data[0].shape, ctx=data[0].ctx)  # float32
    for a in data:
        total += a.astype('float32').copyto(data[0].ctx)
    for a in data:
        a[:] = total.astype(a.dtype).copyto(a.ctx)


def ar_tree_no_copies(data):
    # A tree whose adds read the partner's device directly: MXNet runs
    # it between CPU contexts with no copyto, so no transfer is counted.
    k, step = len(data), 1
    while step < k:
        for i in range(0, k - step, 2 * step):
            data[i][:] += data[i + step]
        step *= 2
    while step > 1:
        step //= 2
        for i in range(0, k - step, 2 * step):
            data[i + step][:] = data[i].as_in_ctx(data[i + step].ctx)


def ar_implicit_reads(data):
    # A naive allreduce reading every device's array from device 0's.
    total = data[0].copy()
    for a in data[1:]:
        total = total + a
    for a in data:
        a[:] = a * 0 + total


BUGS = [
    (dp.check_allreduce, ar_rebinds, 'not-in-place'),
    (dp.check_allreduce, ar_reduce_only, 'not-broadcast'),
    (dp.check_allreduce, ar_mean, 'averaged'),
    (dp.check_allreduce, ar_neighbour, 'wrong-sum'),
    (dp.check_allreduce, ar_one_device, 'changed-device'),
    (dp.check_allreduce, ar_float32, 'changed-dtype'),
    (dp.check_allreduce, stub_none, 'did-nothing'),
    (dp.check_allreduce, ar_wraps_tree, 'calls-library'),
    (check_tree_allreduce, ar_gather, 'not-a-tree'),
    (check_sharded_allreduce, ar_gather, 'not-sharded'),
    (check_tree_allreduce, ar_tree_no_copies, 'mixed-devices'),
    (check_tree_allreduce, ar_implicit_reads, 'mixed-devices'),
    (dp.check_allreduce, ar_implicit_reads, 'mixed-devices'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy implementation fails, and every failing case names
    exactly the mistake it makes."""
    assert_names_only(check, bug, code)


REFERENCES = [
    (dp.check_allreduce, dp.allreduce),
    (dp.check_allreduce, dp.sharded_allreduce),
    (dp.check_allreduce, dp.ring_allreduce),
    (check_tree_allreduce, tree_allreduce),
    (check_sharded_allreduce, dp.sharded_allreduce),
]


@pytest.mark.parametrize(
    'check, fn',
    REFERENCES,
    ids=[f'{c.__name__}-{f.__name__}' for c, f in REFERENCES],
)
def test_reference_passes(check, fn):
    """The library's allreduces, and a correct tree, pass every case."""
    assert_passes(check, fn)
