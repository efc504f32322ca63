"""d2lpar's first part in PyTorch: ``from d2lpar import torch as dp``.

The same names with the same meanings as ``import d2lpar as dp`` (MXNet),
on PyTorch tensors and ``torch.device``; d2l's convention, where the
framework is chosen at import::

    from d2lpar import torch as dp
    devices = dp.devices(2)
    params = dp.init_lenet_params(seed=0, scale=0.1)  # MXNet's values
    device_params = [dp.get_params(params, d) for d in devices]
    dp.train_batch(X, y, device_params, devices, lr=0.2)

===================  ===================================================
devices              :func:`devices` (k CPU devices in one process take
                     turns: see :mod:`d2lpar.torch.devices`)
A toy network        init_lenet_params, lenet, get_params, LENET_SHAPES
allreduce            allreduce (its docstring states the contract),
                     check_allreduce (names a student's mistake)
split_batch          split_batch, shard_sizes, shard_ranges
train_batch          train_batch, cross_entropy, sgd
Training             train -> TrainResult, load_fashion_mnist,
                     evaluate_accuracy
Several processes    python -m d2lpar launch --engine torch --workers N
                     -- python -m d2lpar worker --engine torch
                     (d2lpar.torch.launch, d2lpar.torch.worker)
===================  ===================================================

Nothing here imports MXNet: the framework-neutral parts (shard sizes,
the epoch loop and its TrainResult, the IDX reader, the grader's
reports and mistake table) are the library's own, shared.

Install: ``pip install "d2lpar[torch]"`` (torch 2.13.0; on Linux take the
CPU build from PyTorch's CPU index, or its CUDA build for GPUs: see
README).
"""

from .collectives import allreduce
from .data import load_fashion_mnist
from .devices import devices
from .evaluation import evaluate_accuracy
from .grading import check_allreduce
from .model import LENET_SHAPES, get_params, init_lenet_params, lenet
from .splitting import shard_ranges, shard_sizes, split_batch
from .training import (
    INIT_SCALE,
    TrainResult,
    cross_entropy,
    sgd,
    train,
    train_batch,
)

__all__ = [
    'INIT_SCALE',
    'LENET_SHAPES',
    'TrainResult',
    'allreduce',
    'check_allreduce',
    'cross_entropy',
    'devices',
    'evaluate_accuracy',
    'get_params',
    'init_lenet_params',
    'lenet',
    'load_fashion_mnist',
    'sgd',
    'shard_ranges',
    'shard_sizes',
    'split_batch',
    'train',
    'train_batch',
]
