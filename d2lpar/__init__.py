"""d2lpar: the companion library of the book on data-parallel training.

Every function a chapter teaches lives here, tested, so that the page, the
code a reader runs, and the code imported in homework are the same code::

    import d2lpar as dp
    result = dp.train(num_gpus=2, num_epochs=1)   # prints one line/epoch
    result.train_loss, result.test_acc             # per-epoch numbers

Main functions, by chapter (help(dp.NAME) for each):

  A toy network      init_lenet_params, lenet, get_params, devices
  allreduce          allreduce (its docstring states the contract every
                     algorithm= must meet), check_allreduce
  split_batch        split_batch, shard_sizes, plot_split
  train_batch        train_batch (algorithm=, split=, accumulate=)
  Training           train -> TrainResult, load_fashion_mnist,
                     evaluate_accuracy, plot_accuracy
  Exercises          sharded_allreduce, evaluate_accuracy_sharded
  Communication      ring_allreduce, run_schedule, bucketed_allreduce,
                     kvstore_allreduce, comm (schedules,
                     cost model)
  Concise            gluon_lenet, set_lenet_params, train_concise
  Multiprocess       multiprocess (launch, run_worker, engines); the
                     command line python -m d2lpar {train,worker,launch,bench}
  Your own loop      epochs.run_epochs (the loop train uses), checks
  The book           pages (book_settings, glue_text, figures), bench

Install: pip install "d2lpar[cpu]" (MXNet's CPU build), or d2lpar plus
the CUDA build mxnet-cuXXX==1.9.1; "d2lpar[notebook]" adds Jupyter.
Data: Fashion-MNIST is read from $D2LPAR_DATA, or pass root= to
load_fashion_mnist (see its docstring for the other places searched).

Importing d2lpar changes a few things in MXNet and numpy (a scratch
pool variable, numpy's removed aliases, ``npx.set_np()``, a fork hook,
``cpu(0)``'s threads): all of them, and why, are listed in one place,
``d2lpar._runtime``. The benchmarks, several processes, the grader and
the figures (matplotlib) load the first time one of their names is used.

Training through the library (``train_batch``, ``train``,
``train_concise``) also sets how many OpenMP threads each CPU device's
worker uses: all cores for one device, ``cores // k`` each for k
devices (``thread_budget``; MXNet's default is half the processors per
device on x86, ``threads.mxnet_default_threads``). A device that has
trained beside others keeps its share for the rest of the process.
"""

import importlib

# Every import-time side effect, documented there; before anything
# below imports MXNet.
from . import _runtime

_runtime.start()

from . import checks, comm, epochs, pages
from ._runtime import CPU_TEMP_COPY
from .collectives import allreduce
from .comm import (
    bucketed_allreduce,
    doubling_allreduce,
    flat_view,
    kvstore_allreduce,
    ring_allreduce,
    run_schedule,
    sharded_allreduce,
)
from .data import load_fashion_mnist
from .devices import devices
from .evaluation import evaluate_accuracy, evaluate_accuracy_sharded
from .idx import DatasetError
from .model import LENET_SHAPES, init_lenet_params, lenet
from .pages import BookSettings, book_settings, glue_text, show_source
from .parameters import get_params
from .splitting import shard_ranges, shard_sizes, split_batch
from .techniques import concise
from .techniques.concise import (
    gluon_lenet,
    set_lenet_params,
    train_concise,
)
from .training import (
    INIT_SCALE,
    TrainResult,
    cross_entropy,
    train,
    train_batch,
)

__version__ = '0.1.0'

__all__ = [
    'CPU_TEMP_COPY',
    'concise',
    'INIT_SCALE',
    'bench',
    'checks',
    'comm',
    'multiprocess',
    'epochs',
    'pages',
    'BookSettings',
    'DatasetError',
    'LENET_SHAPES',
    'TrainResult',
    'allreduce',
    'book_settings',
    'bucketed_allreduce',
    'kvstore_allreduce',
    'cross_entropy',
    'devices',
    'doubling_allreduce',
    'draw_parallelism_schemes',
    'evaluate_accuracy',
    'glue_text',
    'gluon_lenet',
    'set_lenet_params',
    'show_source',
    'concise',
    'train_concise',
    'evaluate_accuracy_sharded',
    'get_params',
    'init_lenet_params',
    'lenet',
    'load_fashion_mnist',
    'plot_accuracy',
    'plot_split',
    'ring_allreduce',
    'run_schedule',
    'shard_ranges',
    'shard_sizes',
    'sharded_allreduce',
    'flat_view',
    'split_batch',
    'train',
    'train_batch',
    'check_allreduce',
    'check_average_params',
    'check_evaluate',
    'check_grad_accumulation',
    'check_ring_schedule',
    'check_split_batch',
    'check_train_batch',
    'check_train_epoch',
]

# Beyond the basic step: optimizer state, ZeRO, averaging, replicas.
from .techniques import optim
from .techniques.optim import (
    SGD,
    Adam,
    Momentum,
    init_states,
    state_bytes,
)

__all__ += [
    'optim',
    'SGD',
    'Momentum',
    'Adam',
    'init_states',
    'state_bytes',
]
from .techniques import zero
from .techniques.zero import init_zero_states

__all__ += ['zero', 'init_zero_states']
from .techniques import averaging
from .techniques.averaging import (
    LocalSGDResult,
    average_params,
    local_sgd_step,
    train_local_sgd,
)

__all__ += [
    'averaging',
    'LocalSGDResult',
    'average_params',
    'local_sgd_step',
    'train_local_sgd',
]
from .techniques import batchnorm, replicas
from .techniques.batchnorm import (
    bn_mlp,
    evaluate_bn,
    init_bn_mlp,
    replicate_bn,
)
from .techniques.replicas import DriftDetector, checksum, find_drift

__all__ += [
    'batchnorm',
    'replicas',
    'bn_mlp',
    'evaluate_bn',
    'init_bn_mlp',
    'replicate_bn',
    'DriftDetector',
    'checksum',
    'find_drift',
]
from .techniques import overlap
from .techniques.overlap import (
    comm_overlap,
    make_buckets,
    plot_bucket_sweep,
    plot_timeline,
    profile_step,
    time_overlap,
)

__all__ += [
    'overlap',
    'comm_overlap',
    'make_buckets',
    'plot_bucket_sweep',
    'plot_timeline',
    'profile_step',
    'time_overlap',
]
from .techniques import scaling
from .techniques.scaling import (
    ScalingRun,
    compare_seeds,
    init_mlp_params,
    mlp,
    plot_scaling,
    scaled_lr,
    train_scaling,
    warmup,
)

__all__ += [
    'scaling',
    'ScalingRun',
    'init_mlp_params',
    'mlp',
    'compare_seeds',
    'plot_scaling',
    'scaled_lr',
    'train_scaling',
    'warmup',
]
from .techniques import accumulation
from .techniques.accumulation import CountingAllreduce

__all__ += ['accumulation', 'CountingAllreduce']

# Performance: cores per device.
from .threads import ThreadBudgetWarning, thread_budget, worker_threads

__all__ += ['ThreadBudgetWarning', 'thread_budget', 'worker_threads']

# Loaded the first time they are used (``dp.bench``, ``dp.plot_split``):
# they bring in matplotlib, subprocess machinery or the grader, which a
# chapter that only trains never needs. name -> (module, attribute or
# None for the module itself).
_LAZY = {
    'bench': ('.bench', None),
    'multiprocess': ('.multiprocess', None),
    'grading': ('.grading', None),
    'draw_parallelism_schemes': ('.pages.figures', 'draw_parallelism_schemes'),
    'plot_accuracy': ('.pages.figures', 'plot_accuracy'),
    'plot_split': ('.pages.figures', 'plot_split'),
    'check_allreduce': ('.grading', 'check_allreduce'),
    'check_average_params': ('.grading', 'check_average_params'),
    'check_evaluate': ('.grading', 'check_evaluate'),
    'check_grad_accumulation': ('.grading', 'check_grad_accumulation'),
    'check_ring_schedule': ('.grading', 'check_ring_schedule'),
    'check_split_batch': ('.grading', 'check_split_batch'),
    'check_train_batch': ('.grading', 'check_train_batch'),
    'check_train_epoch': ('.grading', 'check_train_epoch'),
}


def __getattr__(name):
    """Import a lazily loaded module or name on its first use (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(
            f'module {__name__!r} has no attribute {name!r}'
        ) from None
    value = importlib.import_module(module, __name__)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # later uses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
