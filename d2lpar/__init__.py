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
  Memory             keep_freed_memory (import d2lpar calls it)
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

Every name loads the first time it is used (``dp.train`` imports the
training module, and MXNet with it): ``import d2lpar`` itself imports no
MXNet, so ``from d2lpar import torch as dp`` (the PyTorch twin) runs
where MXNet is not installed. What d2lpar changes in the process, in
MXNet and in numpy (a scratch pool variable, glibc's malloc settings,
numpy's removed aliases, ``npx.set_np()``, a fork hook, ``cpu(0)``'s
threads), when, and why, is listed in one place, ``d2lpar._runtime``.

Training through the library (``train_batch``, ``train``,
``train_concise``) also sets how many OpenMP threads each CPU device's
worker uses: all cores for one device, ``max(1, cores // k)`` each for
k devices (``thread_budget``; MXNet's default is half the processors per
device on x86, ``threads.mxnet_default_threads``). A device that has
trained beside others keeps its share for the rest of the process.
"""

import importlib
import importlib.util
import sys
import types

# Items 1 to 4 of d2lpar._runtime (a scratch-pool variable, glibc's
# malloc settings, numpy's removed aliases): cheap, no MXNet, and
# before anything imports MXNet.
from . import _runtime

_runtime.prepare()

__version__ = '0.1.0'

# Public name -> (module, attribute, or None for the module itself).
# Deliberately not ``from .x import y`` lines: each is imported on first
# use (PEP 562), so that MXNet is loaded only by MXNet's part (its
# modules import d2lpar._mxnet first) and the PyTorch twin never loads
# it; the benchmarks, several processes, the grader and matplotlib are
# also loaded only when a chapter uses them.
_NAMES = {
    'checks': ('.checks', None),
    'comm': ('.comm', None),
    'bucketed_allreduce': ('.comm', 'bucketed_allreduce'),
    'doubling_allreduce': ('.comm', 'doubling_allreduce'),
    'flat_view': ('.comm', 'flat_view'),
    'kvstore_allreduce': ('.comm', 'kvstore_allreduce'),
    'ring_allreduce': ('.comm', 'ring_allreduce'),
    'run_schedule': ('.comm', 'run_schedule'),
    'sharded_allreduce': ('.comm', 'sharded_allreduce'),
    'epochs': ('.epochs', None),
    'memory': ('.memory', None),
    'keep_freed_memory': ('.memory', 'keep_freed_memory'),
    'pages': ('.pages', None),
    'BookSettings': ('.pages', 'BookSettings'),
    'book_settings': ('.pages', 'book_settings'),
    'glue_text': ('.pages', 'glue_text'),
    'show_source': ('.pages', 'show_source'),
    'CPU_TEMP_COPY': ('._runtime', 'CPU_TEMP_COPY'),
    'allreduce': ('.collectives', 'allreduce'),
    'load_fashion_mnist': ('.data', 'load_fashion_mnist'),
    'devices': ('.devices', 'devices'),
    'evaluate_accuracy': ('.evaluation', 'evaluate_accuracy'),
    'evaluate_accuracy_sharded': ('.evaluation', 'evaluate_accuracy_sharded'),
    'DatasetError': ('.idx', 'DatasetError'),
    'LENET_SHAPES': ('.model', 'LENET_SHAPES'),
    'init_lenet_params': ('.model', 'init_lenet_params'),
    'lenet': ('.model', 'lenet'),
    'get_params': ('.parameters', 'get_params'),
    'shard_ranges': ('.splitting', 'shard_ranges'),
    'shard_sizes': ('.splitting', 'shard_sizes'),
    'split_batch': ('.splitting', 'split_batch'),
    'concise': ('.techniques.concise', None),
    'gluon_lenet': ('.techniques.concise', 'gluon_lenet'),
    'set_lenet_params': ('.techniques.concise', 'set_lenet_params'),
    'train_concise': ('.techniques.concise', 'train_concise'),
    'INIT_SCALE': ('.training', 'INIT_SCALE'),
    'TrainResult': ('.training', 'TrainResult'),
    'cross_entropy': ('.training', 'cross_entropy'),
    'train': ('.training', 'train'),
    'train_batch': ('.training', 'train_batch'),
    'optim': ('.techniques.optim', None),
    'SGD': ('.techniques.optim', 'SGD'),
    'Adam': ('.techniques.optim', 'Adam'),
    'Momentum': ('.techniques.optim', 'Momentum'),
    'init_states': ('.techniques.optim', 'init_states'),
    'state_bytes': ('.techniques.optim', 'state_bytes'),
    'zero': ('.techniques.zero', None),
    'init_zero_states': ('.techniques.zero', 'init_zero_states'),
    'averaging': ('.techniques.averaging', None),
    'LocalSGDResult': ('.techniques.averaging', 'LocalSGDResult'),
    'average_params': ('.techniques.averaging', 'average_params'),
    'local_sgd_step': ('.techniques.averaging', 'local_sgd_step'),
    'train_local_sgd': ('.techniques.averaging', 'train_local_sgd'),
    'batchnorm': ('.techniques.batchnorm', None),
    'bn_mlp': ('.techniques.batchnorm', 'bn_mlp'),
    'evaluate_bn': ('.techniques.batchnorm', 'evaluate_bn'),
    'init_bn_mlp': ('.techniques.batchnorm', 'init_bn_mlp'),
    'replicate_bn': ('.techniques.batchnorm', 'replicate_bn'),
    'replicas': ('.techniques.replicas', None),
    'DriftDetector': ('.techniques.replicas', 'DriftDetector'),
    'checksum': ('.techniques.replicas', 'checksum'),
    'find_drift': ('.techniques.replicas', 'find_drift'),
    'overlap': ('.techniques.overlap', None),
    'comm_overlap': ('.techniques.overlap', 'comm_overlap'),
    'make_buckets': ('.techniques.overlap', 'make_buckets'),
    'plot_bucket_sweep': ('.techniques.overlap', 'plot_bucket_sweep'),
    'plot_timeline': ('.techniques.overlap', 'plot_timeline'),
    'profile_step': ('.techniques.overlap', 'profile_step'),
    'time_overlap': ('.techniques.overlap', 'time_overlap'),
    'scaling': ('.techniques.scaling', None),
    'ScalingRun': ('.techniques.scaling', 'ScalingRun'),
    'compare_seeds': ('.seeds', 'compare_seeds'),
    'init_mlp_params': ('.techniques.scaling', 'init_mlp_params'),
    'mlp': ('.techniques.scaling', 'mlp'),
    'plot_scaling': ('.techniques.scaling', 'plot_scaling'),
    'scaled_lr': ('.techniques.scaling', 'scaled_lr'),
    'train_scaling': ('.techniques.scaling', 'train_scaling'),
    'warmup': ('.techniques.scaling', 'warmup'),
    'accumulation': ('.techniques.accumulation', None),
    'CountingAllreduce': ('.techniques.accumulation', 'CountingAllreduce'),
    'ThreadBudgetWarning': ('.threads', 'ThreadBudgetWarning'),
    'thread_budget': ('.threads', 'thread_budget'),
    'worker_threads': ('.threads', 'worker_threads'),
    'bench': ('.bench', None),
    'multiprocess': ('.multiprocess', None),
    'grading': ('.grading', None),
    'check_allreduce': ('.grading', 'check_allreduce'),
    'check_average_params': ('.grading', 'check_average_params'),
    'check_evaluate': ('.grading', 'check_evaluate'),
    'check_grad_accumulation': ('.grading', 'check_grad_accumulation'),
    'check_ring_schedule': ('.grading', 'check_ring_schedule'),
    'check_split_batch': ('.grading', 'check_split_batch'),
    'check_train_batch': ('.grading', 'check_train_batch'),
    'check_train_epoch': ('.grading', 'check_train_epoch'),
    'draw_parallelism_schemes': ('.pages.figures', 'draw_parallelism_schemes'),
    'plot_accuracy': ('.pages.figures', 'plot_accuracy'),
    'plot_split': ('.pages.figures', 'plot_split'),
}

__all__ = list(_NAMES)


def __getattr__(name):
    """Import a public name on its first use (PEP 562)."""
    try:
        module, attribute = _NAMES[name]
    except KeyError:
        # A module of the package (dp.training, dp.threads) is reached as
        # an attribute, as when __init__ imported them all.
        if name.startswith('_') or not importlib.util.find_spec(
            f'{__name__}.{name}'
        ):
            raise AttributeError(
                f'module {__name__!r} has no attribute {name!r}'
            ) from None
        module, attribute = f'.{name}', None
    value = importlib.import_module(module, __name__)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # later uses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES))


class _Package(types.ModuleType):
    """d2lpar itself. Python sets each module of a package as an
    attribute of it when first imported, so ``d2lpar.devices`` (the
    function, in d2lpar/devices.py) would become the module once
    anything imported d2lpar/devices.py; a public name of ``_NAMES``
    keeps its value instead (Python's documented way: a module's
    ``__class__`` set to a subclass of ModuleType)."""

    def __setattr__(self, name, value):
        module, attribute = _NAMES.get(name, (None, None))
        if (
            attribute is not None
            and isinstance(value, types.ModuleType)
            and value.__name__ == __name__ + module
        ):
            value = getattr(value, attribute)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
