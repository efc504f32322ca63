"""d2lpar.techniques.concise: Gluon's Trainer takes exactly the from-scratch step."""

import mxnet as mx
import pytest
from conftest import LR, make_batches, needs_real_data, write_fashion_dir
from mxnet import gluon
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp


def gluon_values(net, device):
    """The Gluon parameters on ``device``, in the from-scratch layout."""
    values = [p.data(device).asnumpy() for p in net.collect_params().values()]
    return [v.T if v.ndim == 2 else v for v in values]


def test_same_initial_values():
    """set_lenet_params copies the 8 arrays onto every device."""
    params = dp.init_lenet_params(1, 0.1)
    devices = [mx.cpu(0), mx.cpu(1)]
    net = dp.set_lenet_params(dp.gluon_lenet(), params, devices)
    for d in devices:
        for got, want in zip(gluon_values(net, d), params):
            assert_array_equal(got, want.asnumpy())


def test_set_values_again_keeps_the_trainer_in_step():
    """Copying new values into a block a Trainer already stepped replaces
    them on every device, and the next step starts from them."""
    devices = [mx.cpu(0), mx.cpu(1)]
    net = dp.set_lenet_params(
        dp.gluon_lenet(), dp.init_lenet_params(1, 0.1), devices
    )
    trainer = gluon.Trainer(
        net.collect_params(), 'sgd', {'learning_rate': LR}, kvstore='device'
    )
    X, y = make_batches()[0]
    dp.concise.train_batch(X, y, net, trainer, devices)
    other = dp.init_lenet_params(2, 0.1)
    assert dp.set_lenet_params(net, other, devices) is net
    for d in devices:
        for got, want in zip(gluon_values(net, d), other):
            assert_array_equal(got, want.asnumpy())
    device_params = [dp.get_params(other, d) for d in devices]
    dp.concise.train_batch(X, y, net, trainer, devices)
    dp.train_batch(X, y, device_params, devices, LR)
    for got, want in zip(gluon_values(net, devices[1]), device_params[0]):
        assert_allclose(got, want.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('k', [1, 2, 3])
def test_trainer_step_equals_train_batch(k):
    """After several steps (uneven batches included) Gluon's LeNet with
    Trainer(kvstore='device') holds the parameters of the from-scratch
    train_batch (rtol 1e-5, atol 1e-6), identical on every device."""
    devices = [mx.cpu(i) for i in range(k)]
    start = dp.init_lenet_params(1, 0.1)
    net = dp.set_lenet_params(dp.gluon_lenet(), start, devices)
    trainer = gluon.Trainer(
        net.collect_params(), 'sgd', {'learning_rate': LR}, kvstore='device'
    )
    device_params = [dp.get_params(start, d) for d in devices]
    for X, y in make_batches():
        dp.concise.train_batch(X, y, net, trainer, devices)
        dp.train_batch(X, y, device_params, devices, LR)
    for got, want in zip(gluon_values(net, devices[0]), device_params[0]):
        assert_allclose(got, want.asnumpy(), rtol=1e-5, atol=1e-6)
    for d in devices[1:]:
        for a, b in zip(gluon_values(net, d), gluon_values(net, devices[0])):
            assert_array_equal(a, b)


def test_train_concise_bad_input():
    """A non-positive learning rate or epoch count is refused."""
    with pytest.raises(ValueError, match='lr must be positive'):
        dp.train_concise([mx.cpu(0)], ([], []), lr=0)
    with pytest.raises(ValueError, match='num_epochs must be positive'):
        dp.train_concise([mx.cpu(0)], ([], []), num_epochs=0)


@needs_real_data
def test_train_concise_beats_chance(capsys):
    """Two epochs on 4,000 real images (fixed shuffle) on 2 CPU contexts
    reach far above chance and print the summary line."""
    data = dp.load_fashion_mnist(64, num_train=4000, num_test=500, seed=0)
    result = dp.train_concise(
        [mx.cpu(0), mx.cpu(1)],
        data,
        lr=0.1,
        num_epochs=2,
        params=dp.init_lenet_params(0, 0.1),
    )
    assert result.final_test_acc > 0.5
    assert 'on [cpu(0), cpu(1)]' in capsys.readouterr().out


def test_block_scored_over_all_devices_equals_one_device(isolated_data):
    """train_concise's evaluation: each device scores its shard with the
    block's replica there; the count equals scoring the from-scratch
    network with the same values on one device."""
    params = dp.init_lenet_params(3, 0.1)
    devices = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    net = dp.set_lenet_params(dp.gluon_lenet(), params, devices)
    root = isolated_data / 'tiny'
    write_fashion_dir(root, n_train=20, n_test=200)
    data = dp.load_fashion_mnist(50, root=str(root), seed=0)
    spread = dp.evaluate_accuracy_sharded(
        [None] * 3, data[1], devices, net=lambda X, _: net(X)
    )
    one = dp.evaluate_accuracy(
        dp.get_params(params, mx.cpu(0)), data[1], mx.cpu(0)
    )
    assert spread == one


def test_train_concise_records_what_train_records(capsys):
    """train_concise runs the library's one epoch loop: per-epoch train
    loss, train accuracy, test accuracy and seconds, the data's batch size,
    nothing printed with verbose=False; and from the same start on the
    same batches its train losses equal train()'s (rtol 1e-4)."""
    batches = make_batches()
    data = (batches, batches[:1])
    devices = [mx.cpu(0), mx.cpu(1)]
    concise = dp.train_concise(
        devices,
        data,
        lr=LR,
        num_epochs=2,
        params=dp.init_lenet_params(0, 0.1),
        verbose=False,
    )
    assert capsys.readouterr().out == ''
    scratch = dp.train(
        devices=devices,
        data=data,
        lr=LR,
        num_epochs=2,
        init_scale=0.1,
        plot=False,
        verbose=False,
    )
    for name in ('train_loss', 'train_acc', 'test_acc', 'epoch_seconds'):
        assert len(getattr(concise, name)) == 2, name
    assert concise.batch_size == 12
    assert_allclose(concise.train_loss, scratch.train_loss, rtol=1e-4)
    assert concise.train_acc == scratch.train_acc
