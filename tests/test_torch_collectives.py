"""The PyTorch twin's flat_view and run_schedule, against a plain sum."""

import numpy as onp
import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as dp  # noqa: E402
from d2lpar.comm import (  # noqa: E402
    doubling_schedule,
    naive_schedule,
    ring_schedule,
    sharded_schedule,
)

SCHEDULES = (
    naive_schedule,
    sharded_schedule,
    ring_schedule,
    doubling_schedule,
)


def test_flat_view_writes_reach_the_tensor():
    """A write into a slice of flat_view(a) changes a itself."""
    a = torch.zeros(2, 3)
    flat = dp.flat_view(a)
    flat[2:5] = torch.tensor([1.0, 2.0, 3.0])
    onp.testing.assert_array_equal(
        a.numpy(), [[0.0, 0.0, 1.0], [2.0, 3.0, 0.0]]
    )
    assert flat.shape == (6,)


def test_flat_view_refuses_a_tensor_it_cannot_view():
    """A non-contiguous tensor (a transpose) has no 1-D view: refused
    with a ValueError that says what to do, not silently copied."""
    with pytest.raises(ValueError, match='not contiguous'):
        dp.flat_view(torch.zeros(2, 3).t())
    with pytest.raises(TypeError, match='torch.Tensor'):
        dp.flat_view(onp.zeros(3))


@pytest.mark.parametrize('schedule', SCHEDULES, ids=lambda s: s.__name__)
@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
@pytest.mark.parametrize('shape', [(7,), (2, 3), (3,)])
def test_run_schedule_equals_a_plain_sum(schedule, k, shape):
    """Every schedule of the library, run on PyTorch tensors, leaves the
    elementwise sum in every caller's tensor (the same objects), also
    with fewer elements than devices (shape (3,) on 4 or 5 devices) and
    sizes that do not divide by k; float64 sums match to 1e-12."""
    if schedule is doubling_schedule and k & (k - 1):
        pytest.skip('recursive doubling needs a power of two')
    rng = onp.random.default_rng(k)
    values = [rng.standard_normal(shape) for _ in range(k)]
    devices = dp.devices(k)
    data = [torch.tensor(v, device=d) for v, d in zip(values, devices)]
    originals = list(data)
    assert dp.run_schedule(data, schedule(k)) is None
    for a, b in zip(data, originals):
        assert a is b
        onp.testing.assert_allclose(
            a.numpy(), sum(values), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize('k', [1, 2, 3, 4, 5])
@pytest.mark.parametrize('shape', [(1,), (2,), (7,), (3, 5), (2, 3, 4, 5)])
def test_sharded_allreduce_leaves_every_tensor_the_sum(k, shape):
    """The twin of MXNet's sharded_allreduce (tests/test_comm_algorithms):
    each of k tensors, the caller's own object, equals numpy's sum (rtol
    1e-6) and stays on its kind of device, also with fewer elements than devices
    or a size not divisible by k."""
    rng = onp.random.default_rng(k * 100 + len(shape))
    values = [rng.normal(size=shape).astype('float32') for _ in range(k)]
    devices = dp.devices(k)
    data = [torch.tensor(v, device=d) for v, d in zip(values, devices)]
    originals = list(data)
    assert dp.sharded_allreduce(data) is None
    expected = onp.sum(values, axis=0)
    for a, b, d in zip(data, originals, devices):
        # torch keeps no index on a CPU tensor: compare the device type.
        assert a is b and a.device.type == d.type
        onp.testing.assert_allclose(a.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_sharded_allreduce_names_bad_input():
    """An empty list and mismatched shapes are errors naming the
    function, as MXNet's are."""
    with pytest.raises(ValueError, match='sharded_allreduce'):
        dp.sharded_allreduce([])
    with pytest.raises(ValueError, match='sharded_allreduce.*shape'):
        dp.sharded_allreduce([torch.zeros(3), torch.zeros(4)])
