"""Checkpoints of a multi-process job: written atomically, checked on load.

Rank 0 of :func:`d2lpar.multiprocess.run_worker` saves one after every
epoch (``--save-to``) and reads it back on ``--resume``. The file, and
its checks, are the framework-neutral :mod:`d2lpar.checkpoint` (the
PyTorch worker writes the same one); this module loads it as MXNet
arrays.
"""

from mxnet import np

# The format, its error and the writer are the shared ones, named here
# too; only loading turns the arrays into MXNet's.
from ..checkpoint import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
from ..checkpoint import CheckpointError as CheckpointError
from ..checkpoint import read_checkpoint
from ..checkpoint import save_checkpoint as save_checkpoint


def load_checkpoint(path, num_workers=None, shapes=None):
    """Return ``(params, finished_epochs)`` from
    :func:`d2lpar.checkpoint.save_checkpoint`: MXNet arrays and an int.

    Parameters and errors as :func:`d2lpar.checkpoint.read_checkpoint`:
    a ``CheckpointError`` for a corrupt or truncated file, or one that
    belongs to another number of workers or another model.
    """
    arrays, epoch = read_checkpoint(path, num_workers, shapes)
    return [np.array(a) for a in arrays], epoch
