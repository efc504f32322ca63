"""d2lpar.techniques.replicas: checksums see any changed bit; the drift detector
names the array that diverged and checks only every N steps."""

import mxnet as mx
import pytest
from conftest import make_batches

import d2lpar as dp
from d2lpar.techniques import batchnorm as bn
from d2lpar.techniques import replicas

NAMES = [name for name, _ in dp.LENET_SHAPES]


def lenet_replicas(k=3):
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(seed=0, scale=0.1)
    return devices, [dp.get_params(start, d) for d in devices]


def test_checksum_sees_one_changed_element():
    """Changing one element by one float32 ulp changes the checksum."""
    a = dp.init_lenet_params(seed=0, scale=0.1)[2]
    before = replicas.checksum(a)
    a[3, 4, 1, 1] = a[3, 4, 1, 1] * (1 + 2**-23)
    assert replicas.checksum(a) != before


def test_identical_replicas_show_no_drift():
    """Replicas after several train_batch steps are reported in sync."""
    devices, device_params = lenet_replicas()
    for X, y in make_batches():
        dp.train_batch(X, y, device_params, devices, 0.5)
    assert replicas.find_drift(device_params, NAMES) == []


def test_drift_names_the_perturbed_parameter_and_device():
    """A tiny change to one replica's W3 is reported as W3, with that
    device alone in its group and the size of the change."""
    _, device_params = lenet_replicas()
    device_params[2][4][:] = device_params[2][4] + 1e-6
    (drift,) = replicas.find_drift(device_params, NAMES, step=7)
    assert (drift.step, drift.name) == (7, 'W3')
    assert drift.groups == [(0, 1), (2,)]
    assert abs(drift.max_diff - 1e-6) < 1e-7


def test_detector_checks_every_n_steps_and_keeps_the_first():
    """With every=3 the detector compares at steps 3, 6, 9 only, and
    reports the first drift at the first check after it began."""
    devices, device_params = lenet_replicas(2)
    detector = replicas.DriftDetector(NAMES, every=3)
    for step, (X, y) in enumerate(make_batches(sizes=(8,) * 9), start=1):
        dp.train_batch(X, y, device_params, devices, 0.5)
        if step == 4:  # device 1 silently skips part of an update
            device_params[1][7][:] = device_params[1][7] * 0.5
        detector.check(step, device_params)
    assert detector.checked == [3, 6, 9]
    assert (detector.first.step, detector.first.name) == (6, 'b4')


def test_detector_finds_local_batchnorm_statistics():
    """Local BN keeps parameters in sync but not the running stats: the
    detector names running_mean and running_var; sync BN passes."""
    devices = [mx.cpu(0), mx.cpu(1)]
    names = [n for n, _ in bn.BN_MLP_SHAPES] + list(bn.BN_STAT_NAMES)
    for sync, want in ((False, ['running_mean', 'running_var']), (True, [])):
        params, stats = bn.init_bn_mlp(0)
        device_params, device_stats = bn.replicate_bn(params, stats, devices)
        for X, y in make_batches():
            bn.train_batch(
                X, y, device_params, device_stats, devices, 0.5, sync=sync
            )
        arrays = [p + s for p, s in zip(device_params, device_stats)]
        assert [d.name for d in replicas.find_drift(arrays, names)] == want


def test_bad_arguments_are_refused():
    """Mismatched names and a non-positive period fail early."""
    _, device_params = lenet_replicas(2)
    with pytest.raises(ValueError, match='pass one name per array'):
        replicas.find_drift(device_params, NAMES[:3])
    with pytest.raises(ValueError, match='every must be >= 1'):
        replicas.DriftDetector(NAMES, every=0)
