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
                     run_schedule (an allreduce written as a schedule),
                     flat_view, sharded_allreduce (the exercises)
Homework checks      check_allreduce, check_ring_schedule,
                     check_split_batch, check_evaluate,
                     check_train_batch, check_grad_accumulation,
                     check_average_params, check_train_epoch (name a
                     student's mistake; :mod:`d2lpar.torch.grading`)
split_batch          split_batch, shard_sizes, shard_ranges
train_batch          train_batch, cross_entropy, sgd
Local SGD            local_sgd_step
Training             train -> TrainResult, load_fashion_mnist,
                     evaluate_accuracy, evaluate_accuracy_sharded
                     (the exercises)
The book             glue_text, show_source, pages (the book's
                     framework-neutral helpers and figures,
                     :mod:`d2lpar.pages`, shared), seeds (comparing
                     settings over seeds, :mod:`d2lpar.seeds`, shared)
Several processes    python -m d2lpar launch --engine torch --workers N
                     -- python -m d2lpar worker --engine torch
                     (dp.launch, dp.worker, dp.checkpoint: modules,
                     imported on first use)
===================  ===================================================

Nothing here imports MXNet: the framework-neutral parts (shard sizes,
the epoch loop and its TrainResult, the IDX reader, the grader's
reports and mistake table) are the library's own, shared.

One side effect on import: where MXNet was imported before (``import
d2lpar`` imports it today), PyTorch's operators are given every core
again (``torch.set_num_threads``), unless ``OMP_NUM_THREADS`` is set:
importing MXNet sets the process's OpenMP count, which PyTorch reads, to
MXNet's cap, half the logical CPUs on x86 (measured on a 2-core machine:
2 threads before ``import mxnet``, 1 after), so PyTorch would run on
half the cores. MXNet imported after this module
would lower it again; d2lpar's import hook then calls
:func:`use_every_core` itself (:mod:`d2lpar._runtime`, item 8).

Install: ``pip install "d2lpar[torch]"`` (torch 2.13.0). On Linux, PyPI's
torch is the CUDA build (several GB); for the CPU build add
``--extra-index-url https://download.pytorch.org/whl/cpu``, and for a
GPU the CUDA build matching the machine (``.../whl/cu126``, ...).
"""

import importlib as _importlib
import importlib.util as _importlib_util
import os
import sys

import torch as _torch

from .. import pages, seeds
from ..memory import keep_freed_memory
from ..pages.book import glue_text, show_source
from .averaging import local_sgd_step
from .collectives import (
    allreduce,
    flat_view,
    run_schedule,
    sharded_allreduce,
)
from .data import load_fashion_mnist
from .devices import devices
from .evaluation import evaluate_accuracy, evaluate_accuracy_sharded
from .grading import (
    check_allreduce,
    check_average_params,
    check_evaluate,
    check_grad_accumulation,
    check_ring_schedule,
    check_sharded_allreduce,
    check_split_batch,
    check_train_batch,
    check_train_epoch,
    check_tree_allreduce,
)
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
    'check_average_params',
    'check_evaluate',
    'check_grad_accumulation',
    'check_ring_schedule',
    'check_sharded_allreduce',
    'check_split_batch',
    'check_train_batch',
    'check_train_epoch',
    'check_tree_allreduce',
    'cross_entropy',
    'devices',
    'evaluate_accuracy',
    'evaluate_accuracy_sharded',
    'flat_view',
    'get_params',
    'glue_text',
    'init_lenet_params',
    'keep_freed_memory',
    'lenet',
    'load_fashion_mnist',
    'local_sgd_step',
    'pages',
    'run_schedule',
    'seeds',
    'sgd',
    'shard_ranges',
    'shard_sizes',
    'sharded_allreduce',
    'show_source',
    'split_batch',
    'train',
    'train_batch',
    'use_every_core',
]


def __getattr__(name):
    """A module of the twin (``dp.checkpoint``, ``dp.launch``,
    ``dp.worker``, ...) as an attribute, imported on its first use (PEP
    562), as ``d2lpar``'s own modules are: the engine's modules load only
    when used, and none of them imports MXNet."""
    if name.startswith('_') or not _importlib_util.find_spec(
        f'{__name__}.{name}'
    ):
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    # Importing a submodule sets it as this package's attribute.
    return _importlib.import_module(f'.{name}', __name__)


def __dir__():
    here = os.path.dirname(__file__)
    modules = {
        f[:-3]
        for f in os.listdir(here)
        if f.endswith('.py') and not f.startswith('_')
    }
    return sorted(set(globals()) | modules)


def use_every_core():
    """Let PyTorch's operators use every core this process may run on
    (unless ``OMP_NUM_THREADS`` says otherwise); returns the count."""
    if os.environ.get('OMP_NUM_THREADS'):
        return _torch.get_num_threads()
    if hasattr(os, 'sched_getaffinity'):  # Linux
        cores = len(os.sched_getaffinity(0))
    else:  # macOS, Windows
        cores = os.cpu_count() or 1
    _torch.set_num_threads(cores)
    return cores


if 'mxnet' in sys.modules:  # see the module's documentation
    use_every_core()
