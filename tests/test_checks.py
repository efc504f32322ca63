"""d2lpar.checks: the mistakes a student makes first get a message that
names the argument, the value and the fix."""

import re
import time

import mxnet as mx
import numpy as onp
import pytest
from conftest import make_batches
from mxnet import npx

import d2lpar as dp

DEVICES = [mx.cpu(0), mx.cpu(1)]


def replicas(devices=DEVICES):
    params = dp.init_lenet_params(seed=1, scale=0.1)
    return [dp.get_params(params, d) for d in devices]


@pytest.mark.parametrize(
    'devices, message',
    [
        (
            ['cpu(0)', 'cpu(1)'],
            r"devices\[0\] is the str 'cpu\(0\)', not an "
            r'mx.Context; pass contexts such as npx.cpu\(0\)',
        ),
        (
            [0, 1],
            r'devices\[0\] is the int 0, not an mx.Context; pass '
            r'contexts such as npx.cpu\(0\)',
        ),
        ('cpu', r"devices must be a list of mx.Context, got str 'cpu'"),
    ],
)
def test_devices_as_strings_or_ints(devices, message):
    """train_batch and train refuse devices given as strings or ints and
    say to pass contexts (not "replica 0 lives on cpu(0), not on cpu(0)")."""
    X, y = make_batches()[0]
    with pytest.raises(TypeError, match=message):
        dp.train_batch(X, y, replicas(), devices, 0.1)
    with pytest.raises(TypeError, match=message):
        dp.train(devices=devices, data=([], []), plot=False)


def test_npx_contexts_are_accepted():
    """The contexts the message suggests (npx.cpu(i)) do work: the step
    moves the parameters exactly as the same step on mx.cpu(i) does."""
    X, y = make_batches()[0]
    ours, ref, start = replicas(), replicas(), replicas()[0]
    dp.train_batch(X, y, ours, [npx.cpu(0), npx.cpu(1)], 0.1)
    dp.train_batch(X, y, ref, DEVICES, 0.1)
    for p, q in zip(ours[0], ref[0]):
        onp.testing.assert_array_equal(p.asnumpy(), q.asnumpy())
    assert any(
        not onp.array_equal(p.asnumpy(), s.asnumpy())
        for p, s in zip(ours[0], start)
    )


def test_parameters_without_gradients():
    """Replicas copied without attach_grad() are refused with the fix,
    naming which array, instead of an autograd error deep in MXNet."""
    params = dp.init_lenet_params()
    device_params = [[p.copyto(d) for p in params] for d in DEVICES]
    X, y = make_batches()[0]
    with pytest.raises(
        RuntimeError,
        match=r'device_params\[0\]\[0\] has no '
        r'gradient buffer; call p.attach_grad\(\).*'
        r'dp.get_params',
    ):
        dp.train_batch(X, y, device_params, DEVICES, 0.1)


@pytest.mark.parametrize('which', ['X', 'y'])
def test_numpy_arrays(which):
    """NumPy arrays are refused with 'convert with mxnet.np.array' and the
    dtype to give (NumPy's float64 images keep float64 otherwise), not
    AttributeError: 'numpy.ndarray' object has no attribute 'as_in_ctx';
    the conversion named works."""
    X, y = make_batches()[0]
    batch = {'X': X.asnumpy().astype('float64'), 'y': y}
    if which == 'y':
        batch = {'X': X, 'y': y.asnumpy()}
    cast = 'float32' if which == 'X' else 'int32'
    with pytest.raises(
        TypeError,
        match=rf'train_batch: {which} is a '
        rf'numpy.ndarray, not an mxnet.numpy.ndarray; '
        rf'convert with mxnet.np.array\({which}, dtype="{cast}"\)',
    ):
        dp.train_batch(batch['X'], batch['y'], replicas(), DEVICES, 0.1)
    batch[which] = mx.np.array(batch[which], dtype=cast)
    dp.train_batch(batch['X'], batch['y'], replicas(), DEVICES, 0.1)


@pytest.mark.parametrize(
    'dtype, fix',
    [
        ('float64', 'X.astype("float32")'),
        ('uint8', 'X.astype("float32") / 255'),
    ],
)
def test_image_dtypes(dtype, fix):
    """float64 and uint8 images are named with a cast that works, not a
    raw MXNet dtype error; uint8 is also scaled to 0..1."""
    X, y = make_batches()[0]
    X = (X * 255).astype(dtype)
    with pytest.raises(
        TypeError,
        match=rf'X has dtype {dtype}, but the parameters are float32; '
        rf'convert with {re.escape(fix)}',
    ):
        dp.train_batch(X, y, replicas(), DEVICES, 0.1)
    fixed = eval(fix, {'X': X})
    dp.train_batch(fixed, y, replicas(), DEVICES, 0.1)
    assert float(fixed.max()) <= (1 if dtype == 'uint8' else 255)


def test_torch_tensors():
    """A torch tensor gets the same advice, with .numpy() for torch, and
    the advised conversion trains."""
    torch = pytest.importorskip('torch')
    _, y = make_batches()[0]
    X = torch.zeros(12, 1, 28, 28)
    fix = 'mxnet.np.array(X.numpy(), dtype="float32")'
    with pytest.raises(
        TypeError, match=r'X is a torch.Tensor.*' + re.escape(fix)
    ):
        dp.train_batch(X, y, replicas(), DEVICES, 0.1)
    dp.train_batch(
        eval(fix, {'X': X, 'mxnet': mx}), y, replicas(), DEVICES, 0.1
    )


def test_one_hot_labels():
    """One-hot labels get 'pass class indices', not MXNet's "Shape
    inconsistent, Provided = [4,10]"."""
    X, y = make_batches()[0]
    one_hot = npx.one_hot(y, 10)
    with pytest.raises(
        ValueError,
        match=r'y has shape \(12, 10\), '
        r'expected \(12,\).*one-hot; pass class indices, '
        r'e.g. y.argmax\(axis=1\)',
    ):
        dp.train_batch(X, one_hot, replicas(), DEVICES, 0.1)


def step_params(X, y):
    """The first replica's values after one train_batch step."""
    device_params = replicas()
    dp.train_batch(X, y, device_params, DEVICES, 0.1)
    return [p.asnumpy() for p in device_params[0]]


def test_integral_float_labels_are_accepted():
    """Labels as MXNet makes them (np.array([3, 1, 4]) is float32) train
    exactly like int32 labels."""
    X, y = make_batches()[0]
    hand_made = mx.np.array(y.asnumpy().tolist())
    assert hand_made.dtype == onp.float32
    for a, b in zip(step_params(X, y), step_params(X, hand_made)):
        assert onp.array_equal(a, b)
    assert dp.checks.check_batch(X, hand_made, 'f')[1].dtype == onp.int32


@pytest.mark.parametrize(
    'label, why, fix',
    [
        (10, 'out of range', 'keep only examples whose labels are in 0..9'),
        (-1, 'out of range', 'keep only examples whose labels are in 0..9'),
        (2.5, 'not a whole number', 'pass the class index of each example'),
    ],
)
def test_wrong_label_is_named(label, why, fix):
    """A label of 10 (LeNet has 10 outputs), a negative one or 2.5 is
    named with its position and value, instead of training silently."""
    X, y = make_batches()[0]
    values = y.asnumpy().astype('float32')
    values[5] = label
    with pytest.raises(
        ValueError,
        match=rf'train_batch: y\[5\] is {re.escape(repr(float(label)))}, '
        rf'{why}: labels must be class indices 0..9; {fix}',
    ):
        dp.train_batch(X, mx.np.array(values), replicas(), DEVICES, 0.1)


def test_labels_numbered_from_one():
    """Labels 1..10 are named and the fix given (y - 1) trains."""
    X, _ = make_batches()[0]
    y = mx.np.array(onp.arange(12) % 10 + 1, dtype='int32')
    with pytest.raises(
        ValueError,
        match=r'y\[9\] is 10, out of range.*numbered from 1: pass y - 1',
    ):
        dp.train_batch(X, y, replicas(), DEVICES, 0.1)
    dp.train_batch(X, y - 1, replicas(), DEVICES, 0.1)


def test_column_of_labels():
    """Labels of shape (n, 1) get y.reshape(-1), which keeps every label
    (argmax over one column would turn them all into 0)."""
    X, y = make_batches()[0]
    column = y.reshape(-1, 1)
    with pytest.raises(
        ValueError,
        match=r'y has shape \(12, 1\), expected \(12,\).*flatten it '
        r'with y.reshape\(-1\)',
    ):
        dp.train_batch(X, column, replicas(), DEVICES, 0.1)
    for a, b in zip(step_params(X, y), step_params(X, column.reshape(-1))):
        assert onp.array_equal(a, b)


def test_checking_labels_does_not_wait_for_the_devices():
    """Reading the labels waits for y's own writers only: while a long
    product runs on the device, the check returns long before it."""
    X, y = make_batches()[0]
    a = mx.np.ones((1500, 1500), ctx=DEVICES[1])
    npx.waitall()
    start = time.perf_counter()
    busy = a
    for _ in range(6):
        busy = mx.np.dot(busy, a) / 1500
    queued = time.perf_counter()
    dp.checks.check_batch(X, y, 'train_batch', classes=10)
    checked = time.perf_counter()
    busy.wait_to_read()
    done = time.perf_counter()
    assert checked - queued < (done - start) / 4


@pytest.mark.skipif(
    mx.runtime.Features().is_enabled('CUDA'),
    reason='this MXNet is a CUDA build',
)
def test_gpu_context_on_cpu_build():
    """gpu(0) on the CPU build of MXNet says so and names both fixes,
    instead of a C++ backtrace at the first operator."""
    with pytest.raises(
        ValueError,
        match=r'train: gpu\(0\) asked for, but '
        r'this MXNet has no GPU support.*install '
        r'mxnet-cuXXX.*use dp.devices\(\)',
    ):
        dp.train(devices=[mx.gpu(0)], data=([], []), plot=False)


@pytest.mark.skipif(
    mx.runtime.Features().is_enabled('CUDA'),
    reason='this MXNet is a CUDA build',
)
def test_single_gpu_context_on_cpu_build():
    """check_device, for functions taking one device (get_params), names
    gpu(0) on the CPU build; a string is refused with the fix."""
    with pytest.raises(
        ValueError,
        match=r'get_params: gpu\(0\) asked for, but this MXNet has no '
        r'GPU support',
    ):
        dp.checks.check_device(mx.gpu(0), 'get_params')
    with pytest.raises(TypeError, match=r"got str 'gpu\(0\)'"):
        dp.checks.check_device('gpu(0)', 'get_params')
    dp.checks.check_device(mx.cpu(1), 'get_params')


def test_last_partial_batch():
    """A batch with fewer examples than devices x micro-batches (the last
    partial batch of an epoch) is refused naming both fixes, in
    train_batch and inside train."""
    X, y = make_batches()[0]
    with pytest.raises(
        ValueError,
        match=r'the batch has 1 examples, but 2 '
        r'devices x accumulate=1 need at least 2.*last '
        r"partial batch.*last_batch='discard'",
    ):
        dp.train_batch(X[:1], y[:1], replicas(), DEVICES, 0.1)
    data = ([(X, y), (X[:5], y[:5])], [(X, y)])
    with pytest.raises(
        ValueError,
        match=r'the batch has 5 examples, but 2 '
        r'devices x accumulate=3 need at least 6',
    ):
        dp.train(
            devices=DEVICES, data=data, accumulate=3, plot=False, verbose=False
        )


def returns_the_sum(data):
    """A typical first try: compute the sum and return it."""
    return sum(a.copyto(data[0].ctx) for a in data)


def rebinds(data):
    """Another: put new arrays into the list instead of writing into them."""
    total = sum(a.copyto(data[0].ctx) for a in data)
    for i in range(len(data)):
        data[i] = total.copyto(data[i].ctx)


def sums_on_first_only(data):
    for a in data[1:]:
        data[0][:] += a.copyto(data[0].ctx)


def test_algorithm_returning_a_value():
    """An allreduce that returns the sum instead of writing it in place is
    refused in train_batch, pointing to the contract."""
    X, y = make_batches()[0]
    with pytest.raises(
        TypeError,
        match=r'algorithm returns_the_sum returned '
        r'a ndarray instead of None.*data\[i\]\[:\] = total'
        r'.*help\(d2lpar.allreduce\)',
    ):
        dp.train_batch(
            X, y, replicas(), DEVICES, 0.1, algorithm=returns_the_sum
        )


@pytest.mark.parametrize(
    'algorithm', [dp.allreduce, dp.ring_allreduce, dp.sharded_allreduce]
)
def test_check_allreduce_passes_the_library_algorithms(algorithm):
    """The library's own allreduces meet the contract they document."""
    assert dp.check_allreduce(algorithm).passed


@pytest.mark.parametrize(
    'algorithm, mistake',
    [
        (returns_the_sum, 'not-in-place'),
        (rebinds, 'not-in-place'),
        (sums_on_first_only, 'not-broadcast'),
    ],
)
def test_check_allreduce_names_the_broken_rule(algorithm, mistake):
    """The homework check names the rule each first try breaks, on its
    first failing case."""
    report = dp.check_allreduce(algorithm)
    assert not report
    assert report.failures[0].mistake == mistake


def test_split_hook_must_honour_devices():
    """A split= function that puts every shard on the first device is
    refused with what it returned and what is needed."""

    def one_place(X, y, devices):
        return [X[:6], X[6:]], [y[:6], y[6:]]

    X, y = make_batches()[0]
    with pytest.raises(
        ValueError,
        match=r'split returned X shards of '
        r'sizes \[6, 6\] on \[cpu\(0\), cpu\(0\)\].*shard i '
        r'on devices\[i\]',
    ):
        dp.train_batch(X, y, replicas(), DEVICES, 0.1, split=one_place)
