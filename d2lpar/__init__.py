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
                     kvstore_allreduce, schedules, costmodel
  Concise            gluon_lenet, set_lenet_params, train_concise
  Multiprocess       dist (launch, worker, engines); the command line
                     python -m d2lpar {train,worker,launch,bench}
  Your own loop      epochs.run_epochs (the loop train uses), checks
  The book           book_settings, glue_text, figures, bench

Install: pip install "d2lpar[cpu]" (MXNet's CPU build), or d2lpar plus
the CUDA build mxnet-cuXXX==1.9.1; "d2lpar[notebook]" adds Jupyter.
Data: Fashion-MNIST is read from $D2LPAR_DATA, or pass root= to
load_fashion_mnist (see its docstring for the other places searched).

Importing d2lpar has three side effects on MXNet, all needed before its
first operator runs, and one on numpy, needed before MXNet is imported:

- numpy's type aliases that numpy 1.24 removed (``np.bool``, ``np.int``,
  ...) are restored where missing (``d2lpar._compat``), since MXNet 1.9.1
  reads ``np.bool`` while it imports; with numpy 1.23.5 nothing changes.
- ``MXNET_CPU_TEMP_COPY`` is set to ``CPU_TEMP_COPY`` (64) unless already
  set. All CPU contexts share one pool of scratch buffers, 4 by default,
  handed out round-robin; with 4, two CPU contexts wait for each other's
  buffers and run one after the other (the training chapter measures it).
- ``npx.set_np()`` (in ``d2lpar.model``): MXNet's NumPy interface, as in
  d2l, so arrays are ``mxnet.np.ndarray``.
- ``cpu(0)``'s worker gets every core (``threads.claim_every_core``):
  a worker's OpenMP threads may later go down but never up, since
  MXNet's cached oneDNN operators crash when run with more threads than
  they were built for.

Training through the library (``train_batch``, ``train``,
``train_concise``) also sets how many OpenMP threads each CPU device's
worker uses: all cores for one device, ``cores // k`` each for k
devices (``thread_budget``; MXNet's default is half the processors per
device on x86, ``threads.mxnet_default_threads``). A device that has
trained beside others keeps its share for the rest of the process.
"""

import os
import sys

if sys.version_info[:2] not in ((3, 11), (3, 12)):
    import warnings

    warnings.warn(
        f'd2lpar is tested on Python 3.11 and 3.12, this is '
        f'{sys.version.split()[0]}: MXNet 1.9.1 needs numpy < 2, which '
        f'has no wheels for Python 3.13+; make a Python 3.11 or 3.12 '
        f'venv (see README)',
        stacklevel=2,
    )

# Why 64 scratch buffers: see the module docstring. A value the user set
# wins. Set before MXNet is imported, which reads it.
CPU_TEMP_COPY = '64'
os.environ.setdefault('MXNET_CPU_TEMP_COPY', CPU_TEMP_COPY)

# MXNet 1.9.1 reads np.bool while it imports, an alias numpy 1.24 removed:
# restore the missing aliases first (d2lpar/_compat.py says which, why).
from ._compat import restore_numpy_aliases

restore_numpy_aliases()

try:
    import mxnet  # noqa: F401  (fail here, with a fix, not deep inside)
except ImportError as err:
    if err.name == 'distutils':  # Python 3.12 removed it
        raise ImportError(
            'MXNet 1.9.1 imports distutils, which Python 3.12 removed; '
            'setuptools brings it back: pip install setuptools'
        ) from err
    raise ImportError(
        f'd2lpar needs MXNet 1.9.1, which is not installed in '
        f'{sys.prefix} ({err}); install it with: pip install '
        f'"d2lpar[cpu]" (CPU), or pip install mxnet-cu112==1.9.1 (a CUDA '
        f'build, matching your CUDA).'
    ) from err
except AttributeError as err:  # a numpy name MXNet uses is gone
    raise ImportError(
        f'MXNet 1.9.1 failed to import beside numpy '
        f'{sys.modules["numpy"].__version__} ({err}); d2lpar is tested '
        f'with numpy 1.23.5 and 1.26.4: pip install "numpy>=1.23.5,<2"'
    ) from err

from . import bench, checks, costmodel, dist, epochs, figures, schedules
from .book import BookSettings, book_settings, glue_text, show_source
from .buckets import bucketed_allreduce
from .collectives import (
    allreduce,
    doubling_allreduce,
    flat_view,
    ring_allreduce,
    run_schedule,
    sharded_allreduce,
)
from .concise import (
    gluon_lenet,
    set_lenet_params,
    train_batch_concise,
    train_concise,
)
from .data import load_fashion_mnist
from .devices import devices
from .evaluation import evaluate_accuracy, evaluate_accuracy_sharded
from .figures import draw_parallelism_schemes, plot_accuracy, plot_split
from .homework import (
    check_allreduce,
    check_average_params,
    check_evaluate,
    check_grad_accumulation,
    check_ring_schedule,
    check_split_batch,
    check_train_batch,
    check_train_epoch,
)
from .idx import DatasetError
from .kvstore import kvstore_allreduce
from .model import LENET_SHAPES, init_lenet_params, lenet
from .parameters import get_params
from .splitting import shard_ranges, shard_sizes, split_batch
from .training import TrainResult, cross_entropy, train, train_batch

__version__ = '0.1.0'

__all__ = [
    'bench',
    'checks',
    'costmodel',
    'dist',
    'epochs',
    'figures',
    'schedules',
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
    'train_batch_concise',
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
from . import optim
from .optim import (
    SGD,
    Adam,
    Momentum,
    init_states,
    state_bytes,
    train_batch_optim,
)

__all__ += [
    'optim',
    'SGD',
    'Momentum',
    'Adam',
    'init_states',
    'state_bytes',
    'train_batch_optim',
]
from . import zero
from .zero import init_zero_states, train_batch_zero

__all__ += ['zero', 'init_zero_states', 'train_batch_zero']
from . import averaging
from .averaging import (
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
from . import batchnorm, replicas
from .batchnorm import (
    bn_mlp,
    evaluate_bn,
    init_bn_mlp,
    replicate_bn,
    train_batch_bn,
)
from .replicas import DriftDetector, checksum, find_drift

__all__ += [
    'batchnorm',
    'replicas',
    'bn_mlp',
    'evaluate_bn',
    'init_bn_mlp',
    'replicate_bn',
    'train_batch_bn',
    'DriftDetector',
    'checksum',
    'find_drift',
]
from . import overlap
from .overlap import (
    comm_overlap,
    make_buckets,
    plot_bucket_sweep,
    plot_timeline,
    profile_step,
    time_overlap,
    train_batch_overlap,
)

__all__ += [
    'overlap',
    'comm_overlap',
    'make_buckets',
    'plot_bucket_sweep',
    'plot_timeline',
    'profile_step',
    'time_overlap',
    'train_batch_overlap',
]
from . import scaling
from .scaling import (
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
from . import accumulation
from .accumulation import CountingAllreduce, accumulate_step

__all__ += ['accumulation', 'CountingAllreduce', 'accumulate_step']

# Performance: cores per device.
from .threads import (
    ThreadBudgetWarning,
    claim_every_core,
    thread_budget,
    worker_threads,
)

__all__ += ['ThreadBudgetWarning', 'thread_budget', 'worker_threads']
# Before any operator runs on it: a worker's threads can only go down
# later (d2lpar.threads explains the crash it avoids).
import mxnet as _mx  # noqa: E402

claim_every_core(_mx.cpu(0))
