"""d2lpar.split_batch: every example on exactly one device, in order."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np

import d2lpar as dp


def cpus(k):
    return [mx.cpu(i) for i in range(k)]


@pytest.mark.parametrize('n', [4, 10, 11, 256])
@pytest.mark.parametrize('k', [1, 2, 3, 4])
def test_each_example_once_in_order(n, k):
    """Concatenating the shards gives back X and y exactly; shard i is on
    device i; sizes differ by at most one; no shard is empty."""
    X = np.arange(n * 5).reshape(n, 5)
    y = np.arange(n)
    X_shards, y_shards = dp.split_batch(X, y, cpus(k))
    assert len(X_shards) == len(y_shards) == k
    onp.testing.assert_array_equal(
        onp.concatenate([s.asnumpy() for s in X_shards]), X.asnumpy()
    )
    onp.testing.assert_array_equal(
        onp.concatenate([s.asnumpy() for s in y_shards]), y.asnumpy()
    )
    sizes = [s.shape[0] for s in X_shards]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
    assert sizes == [s.shape[0] for s in y_shards]
    for i, (xs, ys) in enumerate(zip(X_shards, y_shards)):
        assert xs.ctx == ys.ctx == mx.cpu(i)


def test_shard_sizes():
    """The remainder goes to the first shards, one each."""
    assert dp.shard_sizes(10, 3) == [4, 3, 3]
    assert dp.shard_sizes(11, 4) == [3, 3, 3, 2]
    assert dp.shard_sizes(256, 3) == [86, 85, 85]


@pytest.mark.parametrize('k', [2, 3, 4])
def test_shard_sizes_match_mxnet_split_and_load(k):
    """The chapter says split_batch's shards have the sizes of MXNet's
    split_and_load(even_split=False): checked for every n from k to 300."""
    from mxnet import gluon

    for n in range(k, 301):
        theirs = gluon.utils.split_and_load(
            np.zeros((n, 1)), cpus(k), even_split=False
        )
        assert [s.shape[0] for s in theirs] == dp.shard_sizes(n, k), n


def test_mismatched_lengths():
    """X and y of different lengths are refused, naming both lengths."""
    with pytest.raises(ValueError, match='X has 4 examples but y has 3'):
        dp.split_batch(np.zeros((4, 2)), np.zeros(3), cpus(2))


def test_fewer_examples_than_devices():
    """3 examples cannot feed 4 devices."""
    with pytest.raises(ValueError, match='3 examples cannot be split over 4'):
        dp.split_batch(np.zeros((3, 2)), np.zeros(3), cpus(4))


@pytest.mark.parametrize(
    'devices, error, message',
    [
        ([], ValueError, 'device list is empty'),
        ([mx.cpu(0), mx.cpu(0)], ValueError, 'same context twice'),
        (['cpu'], TypeError, 'not an mx.Context'),
        (mx.cpu(0), TypeError, 'must be a list'),
    ],
)
def test_bad_devices(devices, error, message):
    """Empty, repeated or non-context device lists are clear errors."""
    with pytest.raises(error, match=message):
        dp.split_batch(np.zeros((4, 2)), np.zeros(4), devices)
