"""Reference solutions of the assignments the library itself lacks.

The other assignments' references are the library's own functions:
:func:`d2lpar.allreduce`, :func:`d2lpar.sharded_allreduce`,
:func:`d2lpar.schedules.ring_schedule`, :func:`d2lpar.split_batch`,
:func:`d2lpar.evaluate_accuracy_sharded`, :func:`d2lpar.train_batch`.
"""

from mxnet import npx

from ..collectives import allreduce
from ..training import train_batch
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
    """One epoch of :func:`d2lpar.train_batch`, waiting only at the end.

    MXNet queues each batch's work and returns at once; without a wait
    per batch the next batch's split and forward pass are queued while
    the devices still compute, so the two overlap.
    """
    for X, y in train_iter:
        train_batch(X, y, device_params, devices, lr)
    npx.waitall()


__all__ = ['average_params', 'train_batch_accumulate', 'train_epoch']
