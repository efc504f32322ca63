"""The MXNet operations the training-step checks need.

The checks of train_batch, gradient accumulation and the epoch without
per-batch synchronisation all require every replica to equal plain SGD
on one device; the cases, the loop and the naming of what went wrong are
framework-neutral (:mod:`d2lpar.grading.battery`), and :data:`KIT` gives
them MXNet's arrays (:data:`d2lpar.torch.grading.STEPS` is PyTorch's).
"""

import warnings

from mxnet import np

from ..devices import devices as make_devices
from ..model import init_lenet_params
from ..parameters import get_params
from ..threads import ThreadBudgetWarning
from ..training import train_batch
from .battery import STEP_LR, StepKit, step_batch_values

LR = STEP_LR


def make_batches(sizes, seed):
    """Random images and labels, one batch per size
    (:func:`d2lpar.grading.battery.step_batch_values`, int32 labels)."""
    return [
        (np.array(X), np.array(y, dtype='int32'))
        for X, y in step_batch_values(sizes, seed)
    ]


def start(k, seed):
    """Devices, their replicas, and a one-device reference copy."""
    params = init_lenet_params(seed=seed, scale=0.1)
    devs = make_devices(k)
    reference = get_params(params, make_devices(1)[0])
    return devs, [get_params(params, d) for d in devs], reference


def one_device_step(params, X, y, lr=LR):
    """Plain SGD on one device with the library's train_batch."""
    with warnings.catch_warnings():
        # After a k-device case cpu(0) keeps one thread: only the
        # reference's speed suffers, which the student need not hear of.
        warnings.simplefilter('ignore', ThreadBudgetWarning)
        train_batch(X, y, [params], [params[0].ctx], lr)


def values(params):
    """Numpy copies of a replica."""
    return [p.asnumpy() for p in params]


KIT = StepKit(
    'mxnet',
    start=start,
    batches=make_batches,
    step=one_device_step,
    values=values,
    fresh=lambda vs, X: get_params([np.array(v) for v in vs], X.ctx),
    place=lambda a: a.ctx,
    same=lambda p, q: p == q,
)
