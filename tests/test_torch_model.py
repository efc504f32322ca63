"""d2lpar.torch's model, devices and parameters: MXNet's shapes and
values for a seed, MXNet's logits for the same values, distinct devices,
independent replicas."""

import warnings

import numpy as onp
import pytest
from numpy.testing import assert_allclose, assert_array_equal

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402


def mxnet_library():
    """The MXNet library, to compare with (skips where MXNet is absent)."""
    pytest.importorskip('mxnet')
    import d2lpar

    return d2lpar


def test_shapes_are_the_mxnet_libraries():
    dp = mxnet_library()
    assert tdp.LENET_SHAPES == dp.LENET_SHAPES
    params = tdp.init_lenet_params()
    assert [tuple(p.shape) for p in params] == [s for _, s in dp.LENET_SHAPES]
    assert all(p.dtype == torch.float32 for p in params)
    assert all(not p.any() for p in params[1::2])  # biases are zero


@pytest.mark.parametrize('seed, scale', [(0, 0.01), (0, 0.1), (7, 0.3)])
def test_init_values_equal_mxnets_bit_for_bit(seed, scale):
    """The same seed and scale give MXNet's values exactly, and another
    seed gives other values (so the equality is not vacuous)."""
    dp = mxnet_library()
    mine = [p.numpy() for p in tdp.init_lenet_params(seed, scale)]
    theirs = [p.asnumpy() for p in dp.init_lenet_params(seed, scale)]
    for a, b in zip(mine, theirs):
        assert a.dtype == b.dtype == onp.float32
        assert_array_equal(a, b)
    other = tdp.init_lenet_params(seed + 1, scale)[0].numpy()
    assert not onp.array_equal(other, mine[0])
    assert abs(mine[2].std() - scale) < 0.05 * scale


def test_init_does_not_touch_torchs_random_state():
    torch.manual_seed(3)
    before = torch.rand(3)
    torch.manual_seed(3)
    tdp.init_lenet_params(seed=5)
    assert torch.equal(torch.rand(3), before)


def test_lenet_gives_mxnets_logits():
    """For the same values and images, the twin's LeNet gives MXNet's
    logits to float32 rounding."""
    dp = mxnet_library()
    from mxnet import np

    rng = onp.random.default_rng(0)
    X = rng.random((16, 1, 28, 28), dtype=onp.float32)
    mine = tdp.lenet(torch.from_numpy(X), tdp.init_lenet_params(1, 0.1))
    theirs = dp.lenet(np.array(X), dp.init_lenet_params(1, 0.1)).asnumpy()
    assert mine.shape == (16, 10)
    assert onp.abs(theirs).max() > 1e-3  # not all zero
    assert_allclose(mine.detach().numpy(), theirs, rtol=1e-4, atol=1e-6)


def test_lenet_bad_input():
    params = tdp.init_lenet_params()
    with pytest.raises(ValueError, match='expected 8 parameter arrays'):
        tdp.lenet(torch.zeros(2, 1, 28, 28), params[:7])
    with pytest.raises(ValueError, match=r'got \(2, 28, 28\)'):
        tdp.lenet(torch.zeros(2, 28, 28), params)
    with pytest.raises(ValueError, match='scale must be >= 0'):
        tdp.init_lenet_params(scale=-1)


def test_get_params_copies_that_require_grad():
    params = tdp.init_lenet_params(seed=2, scale=0.1)
    device = tdp.devices(1)[0]
    copies = tdp.get_params(params, device)
    for p, c in zip(params, copies):
        assert c.requires_grad and c.is_leaf
        assert c.grad is not None and not c.grad.any()
        assert torch.equal(c.detach(), p)
        assert c.data_ptr() != p.data_ptr()
    with torch.no_grad():
        copies[0] += 1  # a replica changes alone
    assert not torch.equal(copies[0].detach(), params[0])


def test_get_params_bad_device():
    params = tdp.init_lenet_params()
    with pytest.raises(TypeError, match='must be a torch.device such as'):
        tdp.get_params(params, 'cpu')
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match='sees no GPU'):
            tdp.get_params(params, torch.device('cuda', 0))
    with pytest.raises(TypeError, match=r'params\[0\] is a numpy.ndarray'):
        tdp.get_params([onp.zeros(3)], torch.device('cpu'))


# ------------------------------------------------------------- devices


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.delenv('D2LPAR_DEVICES', raising=False)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 0)
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: False)


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.delenv('D2LPAR_DEVICES', raising=False)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 2)


def test_cpu_devices_are_distinct(no_gpu):
    devs = tdp.devices(3)
    assert devs == [torch.device('cpu', i) for i in range(3)]
    assert len(set(devs)) == 3
    assert tdp.devices() == [torch.device('cpu', 0)]


def test_gpus_when_enough(two_gpus):
    assert tdp.devices() == [torch.device('cuda', 0), torch.device('cuda', 1)]
    assert tdp.devices(1) == [torch.device('cuda', 0)]


def test_too_few_gpus_fall_back_to_cpu_with_a_warning(two_gpus):
    with pytest.warns(UserWarning, match='using 3 CPU devices instead'):
        assert tdp.devices(3) == [torch.device('cpu', i) for i in range(3)]


def test_env_forces_the_kind(two_gpus, monkeypatch):
    monkeypatch.setenv('D2LPAR_DEVICES', 'cpu')
    assert tdp.devices(2) == [torch.device('cpu', 0), torch.device('cpu', 1)]
    monkeypatch.setenv('D2LPAR_DEVICES', 'gpu')
    with pytest.raises(ValueError, match='sees only 2'):
        tdp.devices(3)
    monkeypatch.setenv('D2LPAR_DEVICES', 'tpu')
    with pytest.raises(ValueError, match="'tpu' is not understood"):
        tdp.devices(1)


def test_env_gpu_without_gpu(no_gpu, monkeypatch):
    monkeypatch.setenv('D2LPAR_DEVICES', 'gpu')
    with pytest.raises(RuntimeError, match='sees no GPU'):
        tdp.devices(1)


def test_mps_for_one_device_only(no_gpu, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: True)
    assert tdp.devices(1) == [torch.device('mps')]
    assert tdp.devices(2) == [torch.device('cpu', 0), torch.device('cpu', 1)]


@pytest.mark.parametrize('n, error', [(0, ValueError), (1.5, TypeError)])
def test_bad_n(no_gpu, n, error):
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with pytest.raises(error, match='devices: n must be'):
            tdp.devices(n)
