"""d2lpar.grading.evaluation: check_evaluate passes the library's
sharded evaluation and names each mistake a student's makes."""

import pytest
from conftest import assert_names_only, assert_passes, bug_ids, stub_none

import d2lpar as dp


def _shard_counts(device_params, data_iter, devices):
    for X, y in data_iter:
        X_shards, y_shards = dp.split_batch(X, y, devices)
        yield [
            (
                int(
                    (
                        dp.lenet(Xs, p).argmax(axis=1).astype('int32') == ys
                    ).sum()
                ),
                ys.shape[0],
            )
            for Xs, ys, p in zip(X_shards, y_shards, device_params)
        ]


def ev_batch_mean(device_params, data_iter, devices):
    accs = [
        sum(c for c, _ in b) / sum(n for _, n in b)
        for b in _shard_counts(device_params, data_iter, devices)
    ]
    return sum(accs) / len(accs)


def ev_shard_mean(device_params, data_iter, devices):
    accs = [
        c / n
        for b in _shard_counts(device_params, data_iter, devices)
        for c, n in b
    ]
    return sum(accs) / len(accs)


def ev_first_shard(device_params, data_iter, devices):
    b = [s[0] for s in _shard_counts(device_params, data_iter, devices)]
    return sum(c for c, _ in b) / sum(n for _, n in b)


def ev_off_by_one(device_params, data_iter, devices):
    b = [
        s for x in _shard_counts(device_params, data_iter, devices) for s in x
    ]
    return sum(c for c, _ in b) / (sum(n for _, n in b) + 1)


BUGS = [
    (dp.check_evaluate, ev_batch_mean, 'averaged-batches'),
    (dp.check_evaluate, ev_shard_mean, 'averaged-shards'),
    (dp.check_evaluate, ev_first_shard, 'first-shard-only'),
    (dp.check_evaluate, ev_off_by_one, 'wrong-accuracy'),
    (dp.check_evaluate, stub_none, 'bad-return'),
]


@pytest.mark.parametrize('check, bug, code', BUGS, ids=bug_ids(BUGS))
def test_bug_is_named(check, bug, code):
    """The buggy evaluation fails, and every failing case names exactly
    the mistake it makes."""
    assert_names_only(check, bug, code)


def test_reference_passes():
    """The library's evaluate_accuracy_sharded passes every case."""
    assert_passes(dp.check_evaluate, dp.evaluate_accuracy_sharded)
