"""Reference solutions of the assignments the library itself lacks.

The other assignments' references are the library's own functions:
:func:`d2lpar.allreduce`, :func:`d2lpar.sharded_allreduce`,
:func:`d2lpar.comm.ring_schedule`, :func:`d2lpar.split_batch`,
:func:`d2lpar.evaluate_accuracy_sharded`, :func:`d2lpar.train_batch`.
"""

from .. import training as _training
from ..collectives import allreduce
from .training import train_batch_accumulate


def average_params(device_params):
    """Replace every replica's parameters by their mean, in place.

    Parameters
    ----------
    device_params : list of list of mxnet.numpy.ndarray
        ``device_params[i]`` lives on device ``i``.
    """
    k = len(device_params)
    for j in range(len(device_params[0])):
        allreduce([params[j] for params in device_params])
        for params in device_params:
            params[j][:] = params[j] / k


def train_epoch(train_iter, device_params, devices, lr):
    """One epoch of ``dp.train_batch`` with two steps in flight; return
    ``(mean_loss, accuracy)``.

    Each step's numbers are read (``.item()``) only after the next step
    is queued, as :func:`d2lpar.epochs.run_epochs` does: reading them
    waits only for that step's forward pass, and while Python splits and
    queues the step after, the devices work through the rest of this
    step and the next.
    """
    loss = correct = examples = 0.0
    pending = None
    for X, y in train_iter:
        step = _training.train_batch(X, y, device_params, devices, lr)
        if pending is not None:  # the previous step, now the next is queued
            loss += sum(a.item() for a in pending[0])
            correct += sum(a.item() for a in pending[1])
        pending = step
        examples += X.shape[0]
    loss += sum(a.item() for a in pending[0])
    correct += sum(a.item() for a in pending[1])
    return loss / examples, correct / examples


__all__ = ['average_params', 'train_batch_accumulate', 'train_epoch']
