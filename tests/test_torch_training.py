"""d2lpar.torch's allreduce, split_batch, train_batch and train: k
devices equal one device, shards cover every example once, bad input is
named, and one step agrees with MXNet's from the same values."""

import numpy as onp
import pytest
from conftest import BATCH_SIZES, LR, write_fashion_dir
from numpy.testing import assert_allclose, assert_array_equal

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402


def cpus(k):
    return [torch.device('cpu', i) for i in range(k)]


def make_batches(sizes=BATCH_SIZES, seed=0):
    """NumPy batches ``[(X, y), ...]``: X float32 (n, 1, 28, 28) in [0, 1),
    y int64 labels; the MXNet tests' sizes (11 and 7 divide by neither 2
    nor 3)."""
    rng = onp.random.default_rng(seed)
    return [
        (
            rng.uniform(size=(n, 1, 28, 28)).astype(onp.float32),
            rng.integers(0, 10, n),
        )
        for n in sizes
    ]


def as_torch(batches):
    return [(torch.from_numpy(X), torch.from_numpy(y)) for X, y in batches]


# ----------------------------------------------------------- allreduce


@pytest.mark.parametrize('k', [1, 2, 3, 5])
@pytest.mark.parametrize('shape', [(1,), (7,), (3, 4)])
def test_allreduce_sums_in_place(k, shape):
    """Every tensor, the same object as passed in, holds the sum; it
    returns None."""
    rng = onp.random.default_rng(k)
    values = [rng.normal(size=shape).astype(onp.float32) for _ in range(k)]
    data = [torch.tensor(v) for v in values]
    objects = list(data)
    assert tdp.allreduce(data) is None
    for a, b in zip(data, objects):
        assert a is b
        assert_allclose(a.numpy(), sum(values), rtol=1e-6)


def test_allreduce_sums_gradients_without_autograd():
    """Gradients of leaf tensors are summed (no 'a leaf Variable that
    requires grad' error, nothing recorded)."""
    params = [tdp.get_params([torch.ones(3)], d)[0] for d in cpus(2)]
    for i, p in enumerate(params):
        (p.sum() * (i + 1)).backward()
    tdp.allreduce([p.grad for p in params])
    assert all(torch.equal(p.grad, torch.full((3,), 3.0)) for p in params)


def test_allreduce_bad_input():
    with pytest.raises(ValueError, match='non-empty list of tensors'):
        tdp.allreduce([])
    with pytest.raises(ValueError, match=r'data\[1\] has shape \(3,\)'):
        tdp.allreduce([torch.ones(2), torch.ones(3)])
    with pytest.raises(TypeError, match=r'data\[1\] is torch.float64'):
        tdp.allreduce([torch.ones(2), torch.ones(2, dtype=torch.float64)])
    with pytest.raises(TypeError, match=r'data\[0\] is a numpy.ndarray'):
        tdp.allreduce([onp.ones(2), onp.ones(2)])


# --------------------------------------------------------- split_batch


@pytest.mark.parametrize('n, k', [(4, 1), (12, 3), (11, 3), (7, 2), (5, 5)])
def test_split_covers_every_example_once_in_order(n, k):
    X = torch.arange(n * 2).reshape(n, 2)
    y = torch.arange(n)
    X_shards, y_shards = tdp.split_batch(X, y, cpus(k))
    sizes = [len(s) for s in y_shards]
    assert sizes == tdp.shard_sizes(n, k) and max(sizes) - min(sizes) <= 1
    assert torch.equal(torch.cat(X_shards), X)
    assert torch.equal(torch.cat(y_shards), y)
    assert all(x.shape[0] == t.shape[0] for x, t in zip(X_shards, y_shards))


def test_split_bad_input():
    X, y = torch.zeros(4, 2), torch.zeros(3)
    with pytest.raises(ValueError, match='X has 4 examples but y has 3'):
        tdp.split_batch(X, y, cpus(2))
    with pytest.raises(ValueError, match='2 examples cannot be split over 3'):
        tdp.split_batch(X[:2], y[:2], cpus(3))
    with pytest.raises(ValueError, match='name the same device twice'):
        tdp.split_batch(X, X[:, 0], [torch.device('cpu')] * 2)
    with pytest.raises(ValueError, match='name the same device twice'):
        tdp.split_batch(
            X, X[:, 0], [torch.device('cpu'), torch.device('cpu', 0)]
        )
    with pytest.raises(TypeError, match=r"devices\[0\] is the str 'cpu'"):
        tdp.split_batch(X, X[:, 0], ['cpu'])
    with pytest.raises(ValueError, match='device list is empty'):
        tdp.split_batch(X, X[:, 0], [])


# --------------------------------------------------------- train_batch


def run_steps(k, batches, **options):
    """Train on k CPU devices from seed 1; replicas agree after every
    step (bit for bit: each applies the same summed gradient)."""
    devices = cpus(k)
    params = tdp.init_lenet_params(seed=1, scale=0.1)
    device_params = [tdp.get_params(params, d) for d in devices]
    for X, y in as_torch(batches):
        tdp.train_batch(X, y, device_params, devices, LR, **options)
        for replica in device_params[1:]:
            for p, q in zip(device_params[0], replica):
                assert torch.equal(p, q)
    return [p.detach().numpy().copy() for p in device_params[0]]


def reference_steps(batches):
    """Plain whole-batch SGD with autograd on one tensor list, written
    without the twin's train_batch."""
    params = [
        p.requires_grad_() for p in tdp.init_lenet_params(seed=1, scale=0.1)
    ]
    for X, y in as_torch(batches):
        l = torch.nn.functional.cross_entropy(
            tdp.lenet(X, params), y, reduction='sum'
        )
        grads = torch.autograd.grad(l, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= LR * g / X.shape[0]
    return [p.detach().numpy() for p in params]


def test_one_device_is_minibatch_sgd():
    batches = make_batches()
    got, want = run_steps(1, batches), reference_steps(batches)
    start = tdp.init_lenet_params(seed=1, scale=0.1)
    assert any(onp.abs(g - s.numpy()).max() > 1e-4 for g, s in zip(got, start))
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('k', [2, 3, 4])
def test_k_devices_equal_one_device(k):
    """After four steps (batches of 12, 11, 7, 12: uneven shards on 2, 3
    and 4 devices), k devices hold one device's parameters."""
    batches = make_batches()
    for got, want in zip(run_steps(k, batches), run_steps(1, batches)):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_no_gradient_leaks_into_the_next_step():
    """Two steps on the same batch equal two reference steps: PyTorch adds
    into .grad, so a step that did not zero it would double the second
    gradient."""
    batches = make_batches((8, 8))
    batches[1] = batches[0]
    for got, want in zip(run_steps(2, batches), reference_steps(batches)):
        assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_returns_losses_and_correct_counts():
    X, y = as_torch(make_batches((11,)))[0]
    devices = cpus(2)
    params = tdp.init_lenet_params(seed=1, scale=0.1)
    device_params = [tdp.get_params(params, d) for d in devices]
    logits = tdp.lenet(X, params)
    losses, corrects = tdp.train_batch(X, y, device_params, devices, LR)
    want = torch.nn.functional.cross_entropy(logits, y, reduction='sum')
    assert_allclose(sum(l.item() for l in losses), want.item(), rtol=1e-5)
    assert [c.item() for c in corrects] == [
        (logits[a:b].argmax(1) == y[a:b]).sum().item()
        for a, b in tdp.shard_ranges(11, 2)
    ]
    assert not any(l.requires_grad for l in losses)


def test_float_labels_holding_whole_numbers_are_accepted():
    X, y = as_torch(make_batches((6,)))[0]
    got = []
    for labels in (y, y.to(torch.float32), y.to(torch.int32)):
        devices = cpus(2)
        device_params = [
            tdp.get_params(tdp.init_lenet_params(1, 0.1), d) for d in devices
        ]
        tdp.train_batch(X, labels, device_params, devices, LR)
        got.append(device_params[0][0].detach())
    assert torch.equal(got[0], got[1]) and torch.equal(got[0], got[2])


def test_train_batch_bad_input_is_named():
    devices = cpus(2)
    params = tdp.init_lenet_params()
    device_params = [tdp.get_params(params, d) for d in devices]
    X, y = as_torch(make_batches((6,)))[0]
    cases = [
        ((X, y, device_params, devices, 0), ValueError, 'lr must be positive'),
        (
            (X, y, device_params, cpus(3), LR),
            ValueError,
            '2 parameter replicas for 3 devices',
        ),
        (
            (X.numpy(), y, device_params, devices, LR),
            TypeError,
            r'X is a numpy.ndarray, not a torch.Tensor; convert with '
            r'torch.as_tensor',
        ),
        (
            ((X * 255).to(torch.uint8), y, device_params, devices, LR),
            TypeError,
            r'X has dtype torch.uint8.*/ 255',
        ),
        (
            (X, y + 1, device_params, devices, LR),
            ValueError,
            r'y\[\d\] is 10, out of range',
        ),
        (
            (X, y + 0.5, device_params, devices, LR),
            ValueError,
            r'y\[0\] is .*, not a whole number',
        ),
        (
            (X, y[:, None], device_params, devices, LR),
            ValueError,
            r'flatten it with y.reshape\(-1\)',
        ),
        (
            (X, torch.nn.functional.one_hot(y, 10), device_params, devices, LR),
            ValueError,
            'they look one-hot',
        ),
        (
            (X[:1], y[:1], device_params, devices, LR),
            ValueError,
            'the batch has 1 examples, but 2 devices need at least 2',
        ),
        (
            (X, y, [[p.detach() for p in ps] for ps in device_params],
             devices, LR),
            RuntimeError,
            r'device_params\[0\]\[0\] does not require a gradient',
        ),
    ]  # fmt: skip
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            tdp.train_batch(*args)


def test_an_allreduce_that_returns_the_sum_is_refused():
    def returns_sum(data):
        return sum(data)

    devices = cpus(2)
    device_params = [
        tdp.get_params(tdp.init_lenet_params(), d) for d in devices
    ]
    X, y = as_torch(make_batches((6,)))[0]
    with pytest.raises(TypeError, match='returns_sum returned a Tensor'):
        tdp.train_batch(
            X, y, device_params, devices, LR, algorithm=returns_sum
        )


def test_a_split_that_drops_examples_is_refused():
    def drops_last(X, y, devices):
        return tdp.split_batch(X[:-1], y[:-1], devices)

    devices = cpus(2)
    device_params = [
        tdp.get_params(tdp.init_lenet_params(), d) for d in devices
    ]
    X, y = as_torch(make_batches((6,)))[0]
    with pytest.raises(ValueError, match=r'sizes \[3, 2\].*adding up to 6'):
        tdp.train_batch(X, y, device_params, devices, LR, split=drops_last)


@pytest.mark.parametrize('k', [1, 2])
def test_one_step_agrees_with_mxnets(k):
    """From the same values (the same seed) and the same batch, one step
    of the twin and one step of the MXNet library give the same losses,
    correct counts and parameters, to float32 rounding: every
    parameter's update agrees to 1e-4 of its largest entry."""
    pytest.importorskip('mxnet')
    import mxnet as mx
    from mxnet import np

    import d2lpar as dp

    (X, y), = make_batches((13,), seed=4)  # fmt: skip
    start = dp.init_lenet_params(seed=2, scale=0.1)
    m_devices = [mx.cpu(i) for i in range(k)]
    m_params = [dp.get_params(start, d) for d in m_devices]
    m_losses, m_correct = dp.train_batch(
        np.array(X), np.array(y, dtype='int32'), m_params, m_devices, LR
    )
    t_devices = cpus(k)
    t_params = [
        tdp.get_params(tdp.init_lenet_params(seed=2, scale=0.1), d)
        for d in t_devices
    ]
    t_losses, t_correct = tdp.train_batch(
        torch.from_numpy(X), torch.from_numpy(y), t_params, t_devices, LR
    )
    assert_allclose(
        [l.item() for l in t_losses],
        [l.item() for l in m_losses],
        rtol=1e-5,
    )
    assert [c.item() for c in t_correct] == [c.item() for c in m_correct]
    for s, m, t in zip(start, m_params[-1], t_params[-1]):
        m_update = m.asnumpy() - s.asnumpy()
        t_update = t.detach().numpy() - s.asnumpy()
        assert onp.abs(m_update).max() > 0
        assert_allclose(
            t_update, m_update, atol=1e-4 * onp.abs(m_update).max()
        )


# ------------------------------------------------- data, train, evaluate


@pytest.fixture
def fashion(tmp_path, monkeypatch):
    """Four small IDX files; every other place the loader looks is
    empty."""
    import d2lpar.torch.data as tdata

    monkeypatch.delenv('D2LPAR_DATA', raising=False)
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxnet-home'))
    monkeypatch.setattr(tdata, 'DEBIAN_DIR', str(tmp_path / 'debian'))
    # never the internet: a download tried goes to a closed local port
    monkeypatch.setenv('MXNET_GLUON_REPO', 'http://127.0.0.1:9/')
    root = tmp_path / 'mine'
    written = write_fashion_dir(root, n_train=40, n_test=12)
    return str(root), written


def test_loader_reads_the_files(fashion):
    root, written = fashion
    train_iter, test_iter = tdp.load_fashion_mnist(5, root)
    X = torch.cat([X for X, _ in test_iter])
    y = torch.cat([y for _, y in test_iter])
    assert X.dtype == torch.float32 and X.shape == (12, 1, 28, 28)
    assert_allclose(X[:, 0].numpy(), written['test'][0] / 255, rtol=1e-6)
    assert y.dtype == torch.int64
    assert_array_equal(y.numpy(), written['test'][1])
    ys = torch.cat([y for _, y in train_iter]).numpy()
    assert sorted(ys) == sorted(written['train'][1])


def test_seeded_order_is_mxnets(fashion):
    """With a seed, the twin's loader yields MXNet's minibatches, in
    MXNet's order, epoch after epoch, and from start_epoch on."""
    pytest.importorskip('mxnet')
    import d2lpar as dp

    root, _ = fashion

    def labels(load, **kwargs):
        train_iter, _ = load(8, root, seed=3, **kwargs)
        return [
            [y.tolist() if hasattr(y, 'tolist') else y for _, y in train_iter]
            for _ in range(2)
        ]

    mine = labels(tdp.load_fashion_mnist)
    theirs = labels(dp.load_fashion_mnist)
    as_lists = [[list(map(int, y)) for y in epoch] for epoch in theirs]
    assert [[list(map(int, y)) for y in epoch] for epoch in mine] == as_lists
    assert as_lists[0] != as_lists[1]
    resumed = labels(tdp.load_fashion_mnist, start_epoch=1)[0]
    assert [list(map(int, y)) for y in resumed] == as_lists[1]


def test_missing_data_names_every_place(fashion, tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        tdp.load_fashion_mnist(4, str(tmp_path / 'nowhere'))
    for place in ('nowhere', 'mxnet-home', 'debian', 'apt-get'):
        assert place in str(e.value)


@pytest.mark.parametrize(
    'kwargs, error, message',
    [
        (dict(lr=0), ValueError, 'lr must be positive'),
        (dict(batch_size=0), ValueError, 'batch_size must be positive'),
        (dict(num_epochs=0), ValueError, 'num_epochs must be positive'),
        (dict(num_gpus=0), ValueError, 'num_gpus must be positive'),
        (dict(init_scale=0), ValueError, 'init_scale must be positive'),
        (dict(num_gpus=1.5), TypeError, 'num_gpus must be an int'),
        (dict(devices=[]), ValueError, 'device list is empty'),
    ],
)
def test_train_bad_input(kwargs, error, message):
    """train() refuses bad arguments before loading any data, as
    MXNet's does (the same checks: d2lpar.epochs.check_train_arguments)."""
    with pytest.raises(error, match=message):
        tdp.train(data=([], []), plot=False, **kwargs)


def test_train_records_every_epoch_and_evaluates(fashion, capsys):
    root, _ = fashion
    data = tdp.load_fashion_mnist(8, root, seed=0)
    result = tdp.train(
        batch_size=8,
        num_epochs=2,
        devices=cpus(2),
        data=data,
        plot=False,
        verbose=True,
    )
    assert len(result.test_acc) == len(result.train_loss) == 2
    assert result.batch_size == 8 and result.devices == cpus(2)
    assert all(0 <= a <= 1 for a in result.test_acc + result.train_acc)
    assert result.train_loss[1] < result.train_loss[0]
    assert 'epoch 2/2' in capsys.readouterr().out


def test_a_pytorch_history_is_drawn_by_the_shared_figures(fashion):
    """What tdp.train returns is the history the library's figures draw
    (d2lpar.pages, framework-neutral): its live curves (result.figure)
    and plot_accuracy plot the run's own numbers, epoch by epoch."""
    from d2lpar.pages import plot_accuracy

    root, _ = fashion
    data = tdp.load_fashion_mnist(8, root, seed=0)
    result = tdp.train(
        batch_size=8,
        num_epochs=2,
        devices=cpus(2),
        data=data,
        plot=True,
        verbose=False,
    )
    live = {
        line.get_label(): list(line.get_ydata())
        for line in result.figure.axes[0].get_lines()
    }
    assert live == {
        'train loss': result.train_loss,
        'train acc': result.train_acc,
        'test acc': result.test_acc,
    }
    fig = plot_accuracy([result], ['2 devices'])
    accuracy, seconds = (ax.get_lines()[0] for ax in fig.axes)
    assert list(accuracy.get_xdata()) == [1, 2]
    assert list(accuracy.get_ydata()) == result.test_acc
    assert list(seconds.get_ydata()) == result.epoch_seconds


def test_evaluate_accuracy_counts_examples_not_batches():
    params = tdp.init_lenet_params(seed=1, scale=0.1)
    X, y = as_torch(make_batches((7, 3)))[0]
    right = tdp.lenet(X, params).argmax(1)
    y = right.clone()
    y[:2] = (y[:2] + 1) % 10  # two wrong of 7
    batches = [(X[:5], y[:5]), (X[5:], y[5:])]
    got = tdp.evaluate_accuracy(params, batches, torch.device('cpu'))
    assert got == pytest.approx(5 / 7)
    with pytest.raises(ValueError, match='yielded no examples'):
        tdp.evaluate_accuracy(params, [], torch.device('cpu'))
