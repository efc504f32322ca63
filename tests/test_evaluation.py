"""d2lpar.evaluation: accuracy on one device and spread over several."""

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np

import d2lpar as dp


def half_right_batch(params, n=12, seed=0):
    """A batch whose first half is predicted right, second half wrong."""
    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(n, 1, 28, 28)), dtype='float32')
    preds = dp.lenet(X, params).argmax(axis=1).asnumpy().astype('int32')
    y = preds.copy()
    y[n // 2 :] = (preds[n // 2 :] + 1) % 10
    return X, np.array(y, dtype='int32')


def test_evaluate_accuracy_counts_correct():
    """Accuracy equals the share of argmax predictions that match y."""
    params = dp.init_lenet_params(seed=2, scale=0.1)
    batch = half_right_batch(params)
    assert dp.evaluate_accuracy(params, [batch], mx.cpu(0)) == 0.5


@pytest.mark.parametrize('k', [1, 2, 3])
def test_sharded_equals_single_device(k):
    """Splitting every batch over k devices counts exactly the same
    correct predictions as one device, for uneven batches too."""
    params = dp.init_lenet_params(seed=2, scale=0.1)
    batches = [half_right_batch(params, n, seed=n) for n in (12, 7, 10)]
    devices = [mx.cpu(i) for i in range(k)]
    device_params = [dp.get_params(params, d) for d in devices]
    want = dp.evaluate_accuracy(params, batches, mx.cpu(0))
    got = dp.evaluate_accuracy_sharded(device_params, batches, devices)
    assert got == want == pytest.approx(14 / 29)


@pytest.mark.parametrize(
    'evaluate, args',
    [
        (dp.evaluate_accuracy, (dp.init_lenet_params(), [], mx.cpu(0))),
        (
            dp.evaluate_accuracy_sharded,
            ([dp.init_lenet_params()], [], [mx.cpu(0)]),
        ),
    ],
)
def test_empty_iterator(evaluate, args):
    """An iterator without examples is an error, not a division by 0."""
    with pytest.raises(ValueError, match='no examples'):
        evaluate(*args)
