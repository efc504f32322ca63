"""Checkpoints of the PyTorch worker, in the MXNet worker's format.

The file is the one :mod:`d2lpar.multiprocess.checkpoint` writes (a
NumPy ``.npz`` holding the arrays and a JSON record of the format, the
finished epoch, the job's number of workers and the arrays' shapes),
written atomically and refused on load with the same messages when it is
unreadable or belongs to another job; so a job can be resumed by the
other framework's worker. Written here with NumPy and PyTorch only:
that module imports MXNet.
"""

import json
import os
import zipfile

import numpy as onp
import torch

# The MXNet worker's format name (d2lpar.multiprocess.checkpoint).
CHECKPOINT_FORMAT = 'd2lpar-checkpoint-1'


class CheckpointError(ValueError):
    """A checkpoint cannot be used; the message names it and what to do."""


def save_checkpoint(params, path, epoch, num_workers):
    """Write ``params`` (tensors) atomically: to a temporary file, then
    rename, so a crash while writing leaves the previous checkpoint."""
    meta = {
        'format': CHECKPOINT_FORMAT,
        'epoch': int(epoch),
        'num_workers': int(num_workers),
        'shapes': [list(p.shape) for p in params],
    }
    arrays = {
        f'param_{i}': p.detach().to('cpu').numpy()
        for i, p in enumerate(params)
    }
    tmp = f'{path}.tmp-{os.getpid()}'
    with open(tmp, 'wb') as f:
        onp.savez(f, meta=onp.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def load_checkpoint(path, num_workers=None, shapes=None):
    """Return ``(params, finished_epochs)``: CPU tensors and an int.

    Raises
    ------
    CheckpointError
        If the file is corrupt, truncated, not a d2lpar checkpoint, or
        belongs to another number of workers or another model.
    """
    try:
        with onp.load(path, allow_pickle=False) as saved:
            meta = json.loads(str(saved['meta']))
            if meta.get('format') != CHECKPOINT_FORMAT:
                raise KeyError('format')
            arrays = [saved[f'param_{i}'] for i in range(len(meta['shapes']))]
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise CheckpointError(
            f'{path} is not a readable d2lpar checkpoint ({type(e).__name__}'
            f': {e}); it may be truncated or written by another program. '
            f'Delete it (or pass another --save-to) to start afresh, or '
            f'drop --resume'
        ) from e
    saved_shapes = [tuple(s) for s in meta['shapes']]
    if shapes is not None and saved_shapes != [tuple(s) for s in shapes]:
        raise CheckpointError(
            f'{path} holds a model with shapes {saved_shapes}, not '
            f'{list(shapes)}; resume only the model it was written for, or '
            f'delete it to start afresh'
        )
    if num_workers is not None and meta['num_workers'] != num_workers:
        raise CheckpointError(
            f'{path} was written by a job of {meta["num_workers"]} workers, '
            f'not {num_workers}: the global batch and the data order would '
            f'differ. Resume with --workers {meta["num_workers"]}, or '
            f'delete it to start afresh'
        )
    return [torch.from_numpy(a) for a in arrays], meta['epoch']
