"""Checkpoints of the PyTorch worker, in the MXNet worker's format.

The file, written atomically and refused on load with the same messages
when it is unreadable or belongs to another job, is the
framework-neutral :mod:`d2lpar.checkpoint`, the MXNet worker's too; so a
job can be resumed by the other framework's worker. This module loads
it as PyTorch tensors.
"""

import torch

# The format, its error and the writer are the shared ones, named here
# too; only loading turns the arrays into PyTorch's.
from ..checkpoint import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
from ..checkpoint import CheckpointError as CheckpointError
from ..checkpoint import read_checkpoint
from ..checkpoint import save_checkpoint as save_checkpoint


def load_checkpoint(path, num_workers=None, shapes=None):
    """Return ``(params, finished_epochs)``: CPU tensors and an int.

    Parameters and errors as :func:`d2lpar.checkpoint.read_checkpoint`:
    a ``CheckpointError`` for a corrupt or truncated file, or one that
    belongs to another number of workers or another model.
    """
    arrays, epoch = read_checkpoint(path, num_workers, shapes)
    return [torch.from_numpy(a) for a in arrays], epoch
