"""d2lpar: the companion library of the book on data-parallel training.

Every function a chapter teaches lives here, tested, so that the page, the
code a reader runs, and the code imported in homework are the same code::

    import d2lpar as dp
    result = dp.train(num_gpus=2, num_epochs=10)
"""
from .collectives import allreduce, sharded_allreduce
from .data import DatasetError, load_fashion_mnist
from .devices import devices
from .evaluation import evaluate_accuracy, evaluate_accuracy_sharded
from .model import LENET_SHAPES, init_lenet_params, lenet
from .parameters import get_params
from .plotting import draw_parallelism_schemes, plot_accuracy, plot_split
from .settings import BookSettings, book_settings
from .splitting import shard_sizes, split_batch
from .training import TrainResult, cross_entropy, train, train_batch

__version__ = '0.1.0'

__all__ = [
    'BookSettings', 'DatasetError', 'LENET_SHAPES', 'TrainResult',
    'allreduce', 'book_settings', 'cross_entropy', 'devices',
    'draw_parallelism_schemes', 'evaluate_accuracy',
    'evaluate_accuracy_sharded', 'get_params', 'init_lenet_params',
    'lenet', 'load_fashion_mnist', 'plot_accuracy', 'plot_split',
    'shard_sizes', 'sharded_allreduce', 'split_batch', 'train',
    'train_batch',
]
