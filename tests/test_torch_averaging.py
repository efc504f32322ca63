"""The PyTorch twin's local SGD step, against one device per shard."""

import numpy as onp
import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as dp  # noqa: E402


def _batch(n, seed=0):
    rng = onp.random.default_rng(seed)
    X = torch.from_numpy(rng.random((n, 1, 28, 28), dtype=onp.float32))
    return X, torch.from_numpy(rng.integers(0, 10, n))


@pytest.mark.parametrize('n', [6, 7])
def test_local_step_is_each_shards_own_step(n):
    """Replica j ends where one device's SGD step on shard j alone ends
    (it divides by its own shard size), to float32 rounding (1e-6); the
    weights returned are the shard sizes over the batch size."""
    X, y = _batch(n)
    params = dp.init_lenet_params(seed=0, scale=0.1)
    devices = dp.devices(2)
    local = [dp.get_params(params, d) for d in devices]
    weights = dp.local_sgd_step(X, y, local, devices, lr=0.5)
    sizes = dp.shard_sizes(n, 2)
    assert weights == [s / n for s in sizes]
    start = 0
    for size, replica in zip(sizes, local):
        alone = [dp.get_params(params, devices[0])]
        part = slice(start, start + size)
        dp.train_batch(X[part], y[part], alone, devices[:1], lr=0.5)
        start += size
        for p, q in zip(replica, alone[0]):
            onp.testing.assert_allclose(
                p.detach().numpy(), q.detach().numpy(), atol=1e-6
            )


def test_averaged_local_steps_equal_gradient_averaging():
    """With equal shards, the mean of the replicas after one local step
    equals one data-parallel step on the whole batch (plain SGD is
    linear in the gradient), to 1e-6; the replicas themselves differ."""
    X, y = _batch(8, seed=1)
    params = dp.init_lenet_params(seed=0, scale=0.1)
    devices = dp.devices(2)
    local = [dp.get_params(params, d) for d in devices]
    sync = [dp.get_params(params, d) for d in devices]
    dp.local_sgd_step(X, y, local, devices, lr=0.5)
    dp.train_batch(X, y, sync, devices, lr=0.5)
    assert any(not torch.equal(p, q) for p, q in zip(local[0], local[1]))
    for j, q in enumerate(sync[0]):
        mean = (local[0][j] + local[1][j]) / 2
        onp.testing.assert_allclose(
            mean.detach().numpy(), q.detach().numpy(), atol=1e-6
        )


def test_a_second_step_does_not_reuse_the_first_gradients():
    """Two local steps equal two one-device steps on each shard:
    PyTorch's backward adds into .grad, so a step that forgot to zero it
    would apply the first step's gradient again."""
    X, y = _batch(4, seed=2)
    params = dp.init_lenet_params(seed=0, scale=0.1)
    devices = dp.devices(2)
    local = [dp.get_params(params, d) for d in devices]
    alone = [dp.get_params(params, devices[0])]
    for _ in range(2):
        dp.local_sgd_step(X, y, local, devices, lr=0.5)
        dp.train_batch(X[:2], y[:2], alone, devices[:1], lr=0.5)
    for p, q in zip(local[0], alone[0]):
        onp.testing.assert_allclose(
            p.detach().numpy(), q.detach().numpy(), atol=1e-6
        )
