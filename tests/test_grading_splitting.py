"""d2lpar.grading.splitting: check_split_batch passes the library's
split_batch and names each mistake a student's split makes.

Each bug refuses too small a batch, as the library does, so that it
makes only its own mistake.
"""

import pytest
from conftest import assert_names_only, assert_passes, bug_ids

import d2lpar as dp
from d2lpar.splitting import shard_sizes


def _check_sizes(X, devices, y=None):
    if X.shape[0] < len(devices):
        raise ValueError('too few examples')
    if y is not None and y.shape[0] != X.shape[0]:
        raise ValueError('X and y have different lengths')


def _slices(X, y, devices, sizes, y_sizes=None):
    _check_sizes(X, devices, y)
    out_X, out_y, start, y_start = [], [], 0, 0
    for d, size, ys in zip(devices, sizes, y_sizes or sizes):
        out_X.append(X[start : start + size].as_in_ctx(d))
        out_y.append(y[y_start : y_start + ys].as_in_ctx(d))
        start, y_start = start + size, y_start + ys
    return out_X, out_y


def sb_drops(X, y, devices):
    k = len(devices)
    return _slices(X, y, devices, [X.shape[0] // k] * k)


def sb_overlaps(X, y, devices):
    _check_sizes(X, devices, y)
    n, k = X.shape[0], len(devices)
    base, extra = n // k, n % k
    return (
        [
            X[i * base : (i + 1) * base + extra].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
        [
            y[i * base : (i + 1) * base + extra].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
    )


def sb_strided(X, y, devices):
    _check_sizes(X, devices, y)
    k = len(devices)
    return (
        [X[i::k].as_in_ctx(d) for i, d in enumerate(devices)],
        [y[i::k].as_in_ctx(d) for i, d in enumerate(devices)],
    )


def sb_labels_shifted(X, y, devices):
    sizes = shard_sizes(X.shape[0], len(devices))
    return _slices(X, y, devices, sizes, sizes[::-1])


def sb_one_device(X, y, devices):
    X_shards, y_shards = dp.split_batch(X, y, devices)
    return (
        [x.as_in_ctx(devices[0]) for x in X_shards],
        [t.as_in_ctx(devices[0]) for t in y_shards],
    )


def sb_remainder_last(X, y, devices):
    n, k = X.shape[0], len(devices)
    return _slices(X, y, devices, [n // k] * (k - 1) + [n - n // k * (k - 1)])


def sb_no_check(X, y, devices):
    sizes = shard_sizes(X.shape[0], len(devices))  # no size check
    return (
        [
            X[sum(sizes[:i]) : sum(sizes[: i + 1])].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
        [
            y[sum(sizes[:i]) : sum(sizes[: i + 1])].as_in_ctx(d)
            for i, d in enumerate(devices)
        ],
    )


def sb_no_length_check(X, y, devices):
    # Refuses fewer examples than devices, not fewer labels than examples.
    if X.shape[0] < len(devices):
        raise ValueError('fewer examples than devices')
    return sb_no_check(X, y, devices)


def sb_float32(X, y, devices):
    X_shards, y_shards = dp.split_batch(X, y, devices)
    return [x.astype('float32') for x in X_shards], y_shards


def sb_only_X(X, y, devices):
    return dp.split_batch(X, y, devices)[0]


BUGS = [
    (dp.check_split_batch, sb_drops, 'dropped-examples'),
    (dp.check_split_batch, sb_overlaps, 'duplicated-examples'),
    (dp.check_split_batch, sb_strided, 'reordered'),
    (dp.check_split_batch, sb_labels_shifted, 'labels-mismatched'),
    (dp.check_split_batch, sb_one_device, 'wrong-device'),
    (dp.check_split_batch, sb_remainder_last, 'unbalanced'),
    (dp.check_split_batch, sb_no_check, 'accepted-bad-input'),
    (dp.check_split_batch, sb_no_length_check, 'accepted-bad-input'),
    (dp.check_split_batch, sb_float32, 'changed-dtype'),
    (dp.check_split_batch, sb_only_X, 'bad-return'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy split fails, and every failing case names exactly the
    mistake it makes."""
    assert_names_only(check, bug, code)


def test_reference_passes():
    """The library's split_batch passes every case."""
    assert_passes(dp.check_split_batch, dp.split_batch)
