"""Check a student's multi-device accuracy against the one-device count."""

from mxnet import np

from ..devices import devices as make_devices
from ..model import init_lenet_params, lenet
from ..parameters import get_params
from .battery import evaluate_cases, evaluate_data, judge_accuracy
from .report import call, run_cases


def make_data(case):
    """The case's batches (:func:`d2lpar.grading.battery.evaluate_data`)
    as MXNet arrays, the replicas, the devices, and which examples the
    reference LeNet classifies correctly."""
    params = init_lenet_params(seed=case['k'], scale=0.1)
    devs = make_devices(case['k'])
    batches, right = evaluate_data(
        case, lambda X: lenet(np.array(X), params).argmax(axis=1).asnumpy()
    )
    batches = [(np.array(X), np.array(y, dtype='int32')) for X, y in batches]
    return batches, [get_params(params, d) for d in devs], devs, right


def _evaluate_case(fn, case):
    batches, device_params, devs, right = make_data(case)
    return judge_accuracy(call(fn, device_params, batches, devs), right, case)


def check_evaluate(fn):
    """Check a student's multi-device accuracy on k = 1..5 devices.

    ``fn(device_params, data_iter, devices)`` must behave like
    :func:`d2lpar.evaluate_accuracy_sharded`: split every batch over the
    devices, let device ``i`` score its shard with ``device_params[i]``
    and LeNet (:func:`d2lpar.lenet`), and return the fraction of correct
    predictions over all examples, as a float. Batches and shards of
    different sizes must count by their size.

    Parameters
    ----------
    fn : callable
        The student's ``evaluate_accuracy_sharded(device_params,
        data_iter, devices)``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> bool(dp.check_evaluate(dp.evaluate_accuracy_sharded))
    True
    """
    return run_cases('check_evaluate', fn, evaluate_cases(), _evaluate_case)
