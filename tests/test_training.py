"""d2lpar.training: k-device steps equal 1-device steps; train() works."""

import os
import re
import subprocess
import sys

import mxnet as mx
import numpy as onp
import pytest
from conftest import BATCH_SIZES, LR, ROOT, make_batches, needs_real_data
from mxnet import autograd
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp


def run_steps(k, batches, **options):
    """Train on k CPU contexts; check replicas agree after every step."""
    devices = [mx.cpu(i) for i in range(k)]
    params = dp.init_lenet_params(seed=1, scale=0.1)
    device_params = [dp.get_params(params, d) for d in devices]
    for X, y in batches:
        dp.train_batch(X, y, device_params, devices, LR, **options)
        for replica in device_params[1:]:
            for p, q in zip(device_params[0], replica):
                assert_array_equal(p.asnumpy(), q.asnumpy())
    return [p.asnumpy() for p in device_params[0]]


def reference_steps(batches):
    """Plain whole-batch SGD on one device, written without d2lpar's
    train_batch: the reference the data-parallel step must equal."""
    params = dp.init_lenet_params(seed=1, scale=0.1)
    for p in params:
        p.attach_grad()
    for X, y in batches:
        with autograd.record():
            l = dp.cross_entropy(dp.lenet(X, params), y).sum()
        l.backward()
        for p in params:
            p[:] = p - LR * p.grad / X.shape[0]
    return [p.asnumpy() for p in params]


def test_one_device_matches_reference():
    """train_batch on 1 device is plain minibatch SGD (rtol 1e-5), and it
    really moves the parameters."""
    batches = make_batches()
    got, want = run_steps(1, batches), reference_steps(batches)
    start = dp.init_lenet_params(seed=1, scale=0.1)
    assert any(
        onp.abs(g - s.asnumpy()).max() > 1e-4 for g, s in zip(got, start)
    )
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('k', [2, 3])
def test_k_devices_equal_one_device(k):
    """k-device training equals 1-device training after several steps,
    including batches not divisible by k (rtol 1e-5, atol 1e-6); all
    replicas are identical after every step (checked in run_steps)."""
    batches = make_batches()
    for got, want in zip(run_steps(k, batches), run_steps(1, batches)):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    'options',
    [
        dict(algorithm=dp.ring_allreduce),
        dict(bucket=True),
        dict(algorithm=dp.sharded_allreduce, bucket=True),
        dict(algorithm=dp.kvstore_allreduce, bucket=True),
    ],
)
def test_other_allreduces_equal_the_naive_one(options):
    """train_batch with the ring, sharded or kvstore allreduce, per
    parameter or bucketed, gives the parameters of the naive allreduce on
    3 devices (rtol 1e-5); replicas stay identical."""
    batches = make_batches()
    for got, want in zip(
        run_steps(3, batches, **options), run_steps(3, batches)
    ):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_train_batch_bad_input():
    """Non-positive lr and replicas that don't match devices are refused
    (the other messages are in test_checks.py)."""
    devices = [mx.cpu(0), mx.cpu(1)]
    params = dp.init_lenet_params()
    device_params = [dp.get_params(params, d) for d in devices]
    X, y = make_batches()[0]
    with pytest.raises(ValueError, match='lr must be positive'):
        dp.train_batch(X, y, device_params, devices, 0)
    with pytest.raises(ValueError, match='2 parameter replicas for 3'):
        dp.train_batch(X, y, device_params, devices + [mx.cpu(2)], LR)
    with pytest.raises(
        ValueError,
        match=r'device_params\[0\]\[0\] lives '
        r'on cpu\(1\), but devices\[0\] is cpu\(0\)',
    ):
        dp.train_batch(X, y, device_params[::-1], devices, LR)


@pytest.mark.parametrize('k, m', [(1, 2), (2, 2), (2, 3)])
def test_accumulate_equals_one_big_step(k, m):
    """Summing gradients over m micro-batches before the allreduce gives
    the step on the whole batch: equal to accumulate=1 and to plain SGD
    (rtol 1e-5, atol 1e-6), batches of 12, 11 and 7 included."""
    batches = make_batches()
    got = run_steps(k, batches, accumulate=m)
    for g, w in zip(got, run_steps(k, batches)):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for g, w in zip(got, reference_steps(batches)):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('m', [1, 3])
def test_micro_batches_reduce_once_per_parameter(m):
    """train_micro_batches sums each device's micro-batch gradients
    locally and allreduces once per parameter per step (8 calls, not
    8 m), and its step equals train_batch's (rtol 1e-5, atol 1e-6)."""
    X, y = make_batches()[0]
    devices = [mx.cpu(0), mx.cpu(1)]
    start = dp.init_lenet_params(seed=1, scale=0.1)
    calls = []
    replicas = [dp.get_params(start, d) for d in devices]
    dp.training.train_micro_batches(
        X, y, replicas, devices, LR, m, algorithm=counting(dp.allreduce, calls)
    )
    assert len(calls) == 8
    want = [dp.get_params(start, d) for d in devices]
    dp.train_batch(X, y, want, devices, LR)
    for g, w in zip(replicas[1], want[1]):
        assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)


def test_train_batch_returns_loss_and_correct_counts():
    """train_batch returns, per device, the summed loss and the number of
    correct predictions of its shard: they add up to the loss and
    accuracy of the 1-device forward pass before the step (rtol 1e-5)."""
    X, y = make_batches()[1]
    params = dp.init_lenet_params(seed=1, scale=0.1)
    logits = dp.lenet(X, params)
    want_loss = dp.cross_entropy(logits, y).sum().item()
    want_correct = (logits.argmax(axis=1).astype('int32') == y).sum().item()
    devices = [mx.cpu(0), mx.cpu(1)]
    device_params = [dp.get_params(params, d) for d in devices]
    losses, corrects = dp.train_batch(
        X, y, device_params, devices, LR, accumulate=2
    )
    assert len(losses) == len(corrects) == 4  # 2 devices x 2 micro-batches
    assert_allclose(sum(l.item() for l in losses), want_loss, rtol=1e-5)
    assert sum(c.item() for c in corrects) == want_correct


def synthetic_data(batches=None):
    batches = batches or make_batches()
    return batches, batches[:1]


def counting(function, calls):
    def wrapped(*args):
        calls.append(len(args[0]))
        return function(*args)

    wrapped.__name__ = function.__name__
    return wrapped


def test_train_runs_the_students_algorithm_and_split():
    """train(algorithm=, split=) calls the given functions in every step
    (8 parameters' allreduces and one split per batch) and, since they
    compute the same thing, gives the losses of the default run (rtol
    1e-5)."""
    devices = [mx.cpu(0), mx.cpu(1)]
    base = dp.train(
        devices=devices,
        data=synthetic_data(),
        num_epochs=1,
        plot=False,
        verbose=False,
    )
    reduces, splits = [], []
    hooked = dp.train(
        devices=devices,
        data=synthetic_data(),
        num_epochs=1,
        plot=False,
        verbose=False,
        algorithm=counting(dp.ring_allreduce, reduces),
        split=counting(dp.split_batch, splits),
    )
    assert len(reduces) == 8 * len(BATCH_SIZES) and set(reduces) == {2}
    assert splits == list(BATCH_SIZES)
    assert_allclose(hooked.train_loss, base.train_loss, rtol=1e-5)
    assert hooked.test_acc == base.test_acc


def test_train_accumulate_keeps_the_losses():
    """train(accumulate=2) takes the same steps as accumulate=1: equal
    per-epoch train losses over 2 epochs (rtol 1e-5)."""
    devices = [mx.cpu(0), mx.cpu(1)]
    runs = [
        dp.train(
            devices=devices,
            data=synthetic_data(),
            num_epochs=2,
            plot=False,
            verbose=False,
            accumulate=m,
        )
        for m in (1, 2)
    ]
    assert len(runs[0].train_loss) == 2
    assert runs[0].train_loss[1] != runs[0].train_loss[0]
    assert_allclose(runs[1].train_loss, runs[0].train_loss, rtol=1e-5)


def test_train_result_records_every_epoch():
    """TrainResult holds one train loss, train accuracy, test accuracy and
    duration per epoch; the batch size is the data's (12), not the
    batch_size argument, when data= is given."""
    result = dp.train(
        batch_size=99,
        data=synthetic_data(),
        num_epochs=3,
        plot=False,
        verbose=False,
    )
    assert result.batch_size == 12
    for name in ('train_loss', 'train_acc', 'test_acc', 'epoch_seconds'):
        assert len(getattr(result, name)) == 3, name
    assert all(0 <= a <= 1 for a in result.train_acc + result.test_acc)
    assert result.train_loss[-1] < result.train_loss[0]


def test_verbose_false_prints_nothing(capsys):
    """verbose=False prints nothing at all, even with plot=True outside
    Jupyter (no Figure repr, no escape codes); the figure is returned."""
    result = dp.train(
        data=synthetic_data(), num_epochs=2, verbose=False, plot=True
    )
    assert capsys.readouterr().out == ''
    lines = result.figure.axes[0].lines
    assert [line.get_label() for line in lines] == [
        'train loss',
        'train acc',
        'test acc',
    ]
    assert_allclose(lines[2].get_data()[1], result.test_acc)


def test_plot_in_a_script_prints_nothing(tmp_path):
    """A script calling train(plot=True, verbose=False) writes nothing to
    stdout or stderr: d2l's Animator printed a Figure repr and terminal
    escape codes there."""
    script = tmp_path / 'homework.py'
    script.write_text(
        'import numpy as onp\nimport d2lpar as dp\nfrom mxnet import np\n'
        'X = np.array(onp.random.default_rng(0).uniform(size=(8, 1, 28, '
        '28)), dtype="float32")\n'
        'y = np.array(onp.arange(8) % 10, dtype="int32")\n'
        'r = dp.train(data=([(X, y)], [(X, y)]), num_epochs=2, '
        'verbose=False)\n'
        'assert r.figure is not None\n'
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS='ignore')
    env.pop('MPLBACKEND', None)
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ('', '')


@pytest.mark.parametrize(
    'kwargs, message',
    [
        (dict(lr=0), 'lr must be positive'),
        (dict(batch_size=0), 'batch_size must be positive'),
        (dict(num_epochs=0), 'num_epochs must be positive'),
        (dict(num_gpus=0), 'num_gpus must be positive'),
        (dict(accumulate=0), 'accumulate must be positive'),
        (dict(init_scale=0), 'init_scale must be positive'),
        (dict(devices=[]), 'device list is empty'),
    ],
)
def test_train_bad_input(kwargs, message):
    """train() refuses bad arguments before loading any data."""
    data = ([], [])
    with pytest.raises(ValueError, match=message):
        dp.train(data=data, plot=False, **kwargs)


@needs_real_data
def test_one_epoch_with_defaults_beats_chance(capsys):
    """One epoch with the default init_scale and lr on 4,000 real
    Fashion-MNIST images (fixed shuffle, batches of 64) on 2 CPU contexts
    reaches far above the 10% of chance, returns its loss, prints a line
    for the epoch and the chapter's summary line."""
    data = dp.load_fashion_mnist(64, num_train=4000, num_test=500, seed=0)
    devices = [mx.cpu(0), mx.cpu(1)]
    result = dp.train(num_epochs=1, devices=devices, data=data, plot=False)
    assert result.final_test_acc > 0.5
    assert len(result.train_loss) == 1
    assert result.train_loss[0] < onp.log(10)  # below chance's loss
    assert result.devices == devices
    first, last = capsys.readouterr().out.strip().splitlines()[-2:]
    assert re.fullmatch(
        r'epoch 1/1: test acc 0\.\d{3}, train loss '
        r'\d\.\d{3}, train acc 0\.\d{3}, \d+\.\d sec',
        first,
    )
    assert re.fullmatch(
        r'test acc: 0\.\d\d, \d+\.\d sec/epoch on '
        r'\[cpu\(0\), cpu\(1\)\]',
        last,
    )


@pytest.mark.slow
@needs_real_data
def test_train_defaults_one_epoch_full_data():
    """dp.train(num_epochs=1) with every other default (all 60,000
    images, one device) reaches well above chance (> 0.6) and returns
    its per-epoch loss and accuracies."""
    result = dp.train(num_epochs=1, plot=False, verbose=False)
    assert result.final_test_acc > 0.6
    assert result.train_loss[0] < 1.5
    assert len(result.train_acc) == len(result.test_acc) == 1
