"""d2lpar.torch's accuracy on one device and spread over several: the
twin of tests/test_evaluation.py."""

import numpy as onp
import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as dp  # noqa: E402


def half_right_batch(params, n=12, seed=0):
    """A batch whose first half is predicted right, second half wrong."""
    rng = onp.random.default_rng(seed)
    X = torch.tensor(rng.uniform(size=(n, 1, 28, 28)), dtype=torch.float32)
    with torch.no_grad():
        preds = dp.lenet(X, params).argmax(dim=1)
    y = preds.clone()
    y[n // 2 :] = (preds[n // 2 :] + 1) % 10
    return X, y


@pytest.mark.parametrize('k', [1, 2, 3])
def test_sharded_equals_single_device(k):
    """Splitting every batch over k devices counts exactly the same
    correct predictions as one device, for uneven batches too."""
    params = dp.init_lenet_params(seed=2, scale=0.1)
    batches = [half_right_batch(params, n, seed=n) for n in (12, 7, 10)]
    devices = dp.devices(k)
    device_params = [dp.get_params(params, d) for d in devices]
    want = dp.evaluate_accuracy(params, batches, devices[0])
    got = dp.evaluate_accuracy_sharded(device_params, batches, devices)
    assert got == want == pytest.approx(14 / 29)


def test_sharded_counts_each_replica_on_its_own_shard():
    """Each device scores its shard with its own replica: a second
    replica that predicts differently changes the count (so the sum is
    not one device's count repeated)."""
    params = dp.init_lenet_params(seed=2, scale=0.1)
    X, y = half_right_batch(params, 12)
    devices = dp.devices(2)
    other = dp.init_lenet_params(seed=5, scale=0.1)
    with torch.no_grad():
        right_other = (dp.lenet(X[6:], other).argmax(dim=1) == y[6:]).sum()
    got = dp.evaluate_accuracy_sharded([params, other], [(X, y)], devices)
    assert got == pytest.approx((6 + right_other.item()) / 12)


def test_bad_input_is_named():
    """No example, or a batch smaller than the devices, is an error
    naming the function, not a division by 0."""
    params = dp.init_lenet_params()
    devices = dp.devices(2)
    with pytest.raises(ValueError, match='no examples'):
        dp.evaluate_accuracy_sharded([params, params], [], devices)
    X, y = half_right_batch(params, 1)
    with pytest.raises(ValueError, match='split_batch'):
        dp.evaluate_accuracy_sharded([params, params], [(X, y)], devices)
