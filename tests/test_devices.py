"""d2lpar.devices: distinct contexts, GPU when present, clear errors."""

import mxnet as mx
import pytest

import d2lpar as dp


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.delenv('D2LPAR_DEVICES', raising=False)
    monkeypatch.setattr(mx.context, 'num_gpus', lambda: 0)


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.delenv('D2LPAR_DEVICES', raising=False)
    monkeypatch.setattr(mx.context, 'num_gpus', lambda: 2)


def test_cpu_contexts_are_distinct(no_gpu):
    """Without GPUs, n devices are n different CPU contexts, not cpu(0) n
    times (d2l's try_gpu fallback)."""
    assert dp.devices(3) == [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    assert len(set(dp.devices(4))) == 4


def test_default_is_one_cpu_without_gpu(no_gpu):
    """devices() with no GPU gives a single CPU context."""
    assert dp.devices() == [mx.cpu(0)]


def test_gpus_preferred_when_present(two_gpus):
    """When MXNet sees GPUs, they are used, all of them by default."""
    assert dp.devices() == [mx.gpu(0), mx.gpu(1)]
    assert dp.devices(1) == [mx.gpu(0)]


def test_env_forces_cpu(two_gpus, monkeypatch):
    """D2LPAR_DEVICES=cpu gives CPU contexts even with GPUs present."""
    monkeypatch.setenv('D2LPAR_DEVICES', 'cpu')
    assert dp.devices(2) == [mx.cpu(0), mx.cpu(1)]


def test_too_many_gpus_falls_back_to_cpu_contexts(two_gpus):
    """A reader with fewer GPUs than a chapter needs still runs it: k
    distinct CPU contexts, with a warning that says so."""
    with pytest.warns(UserWarning, match='3 devices asked for .* 2 GPU'):
        assert dp.devices(3) == [mx.cpu(0), mx.cpu(1), mx.cpu(2)]


def test_too_many_gpus_when_gpus_forced_is_clear_error(two_gpus, monkeypatch):
    """With D2LPAR_DEVICES=gpu, asking for more GPUs than exist is an
    error naming both numbers."""
    monkeypatch.setenv('D2LPAR_DEVICES', 'gpu')
    with pytest.raises(ValueError, match='asked for 3 GPUs.*only 2'):
        dp.devices(3)


def test_env_gpu_without_gpu(no_gpu, monkeypatch):
    """D2LPAR_DEVICES=gpu on a machine without GPUs says how to fix it."""
    monkeypatch.setenv('D2LPAR_DEVICES', 'gpu')
    with pytest.raises(RuntimeError, match='sees no GPU.*mxnet-cuXXX'):
        dp.devices(1)


def test_unknown_env_value(no_gpu, monkeypatch):
    """An unknown D2LPAR_DEVICES value is refused, not ignored."""
    monkeypatch.setenv('D2LPAR_DEVICES', 'tpu')
    with pytest.raises(ValueError, match='"cpu" or "gpu"'):
        dp.devices(1)


@pytest.mark.parametrize(
    'n, error',
    [(0, ValueError), (-1, ValueError), ('2', TypeError), (1.5, TypeError)],
)
def test_bad_n(no_gpu, n, error):
    """n must be a positive int."""
    with pytest.raises(error, match='devices: n'):
        dp.devices(n)
