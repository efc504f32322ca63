"""d2lpar: the companion library of the book on data-parallel training.

Every function a chapter teaches lives here, tested, so that the page, the
code a reader runs, and the code imported in homework are the same code::

    import d2lpar as dp
    result = dp.train(num_gpus=2, num_epochs=10)
"""
import os

# MXNet gives every CPU context its own worker thread, but all CPU contexts
# share one pool of scratch ("temp space") buffers, 4 by default, handed out
# round-robin. When one device's whole forward pass is queued before the
# next device's, the second device's operators wait for buffers the first
# one still holds, and two CPU contexts run one after the other. A larger
# pool lets them run side by side (the training chapter measures both).
# It must be set before MXNet's first operator runs; a value the user set
# wins.
CPU_TEMP_COPY = '64'
os.environ.setdefault('MXNET_CPU_TEMP_COPY', CPU_TEMP_COPY)

from . import bench, costmodel, dist, figures, schedules
from .book import BookSettings, book_settings, glue_text
from .buckets import bucketed_allreduce
from .collectives import (allreduce, flat_view, ring_allreduce,
                          run_schedule, sharded_allreduce)
from .concise import (gluon_lenet, set_lenet_params, train_batch_concise,
                      train_concise)
from .data import load_fashion_mnist
from .idx import DatasetError
from .devices import devices
from .evaluation import evaluate_accuracy, evaluate_accuracy_sharded
from .kvstore import kvstore_allreduce
from .model import LENET_SHAPES, init_lenet_params, lenet
from .parameters import get_params
from .figures import draw_parallelism_schemes, plot_accuracy, plot_split
from .splitting import shard_sizes, split_batch
from .training import TrainResult, cross_entropy, train, train_batch

__version__ = '0.1.0'

__all__ = [
    'bench', 'costmodel', 'dist', 'figures', 'schedules',
    'BookSettings', 'DatasetError', 'LENET_SHAPES', 'TrainResult',
    'allreduce', 'book_settings', 'bucketed_allreduce',
    'kvstore_allreduce', 'cross_entropy', 'devices',
    'draw_parallelism_schemes', 'evaluate_accuracy', 'glue_text',
    'gluon_lenet', 'set_lenet_params', 'train_batch_concise', 'train_concise',
    'evaluate_accuracy_sharded', 'get_params', 'init_lenet_params',
    'lenet', 'load_fashion_mnist', 'plot_accuracy', 'plot_split',
    'ring_allreduce', 'run_schedule', 'shard_sizes', 'sharded_allreduce',
    'flat_view', 'split_batch', 'train',
    'train_batch',
]

# Beyond the basic step: optimizer state, ZeRO, averaging, replicas.
from . import optim
from .optim import (SGD, Adam, Momentum, init_states,
                    state_bytes, train_batch_optim)

__all__ += [
    'optim', 'SGD', 'Momentum', 'Adam', 'init_states', 'state_bytes',
    'train_batch_optim',
]
from . import zero
from .zero import init_zero_states, train_batch_zero

__all__ += ['zero', 'init_zero_states', 'train_batch_zero']
from . import averaging
from .averaging import (LocalSGDResult, average_params,
                        local_sgd_step, train_local_sgd)

__all__ += ['averaging', 'LocalSGDResult', 'average_params',
            'local_sgd_step', 'train_local_sgd']
from . import batchnorm, replicas
from .batchnorm import (bn_mlp, evaluate_bn, init_bn_mlp, replicate_bn,
                        train_batch_bn)
from .replicas import DriftDetector, checksum, find_drift

__all__ += ['batchnorm', 'replicas', 'bn_mlp', 'evaluate_bn',
            'init_bn_mlp', 'replicate_bn', 'train_batch_bn',
            'DriftDetector', 'checksum', 'find_drift']
from . import overlap
from .overlap import (comm_overlap, make_buckets, plot_timeline,
                      profile_step, time_overlap, train_batch_overlap)

__all__ += ['overlap', 'comm_overlap', 'make_buckets', 'plot_timeline',
            'profile_step', 'time_overlap', 'train_batch_overlap']
