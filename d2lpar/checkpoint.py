"""The checkpoint file of a multi-process job, in either framework.

Rank 0 of a job saves one after every epoch (``--save-to``) and reads
it back on ``--resume``: the MXNet worker
(:func:`d2lpar.multiprocess.run_worker`) and the PyTorch one
(:func:`d2lpar.torch.worker.run_worker`) write the same file, so either
can resume a job the other started. It is a NumPy ``.npz``: the arrays,
and a JSON record of the format, the finished epoch, the job's number
of workers and the arrays' shapes, so that a job of another size or
another model refuses it with a message that says what to do. NumPy
only: each framework turns what :func:`read_checkpoint` returns into its
own arrays (:func:`d2lpar.multiprocess.load_checkpoint`,
:func:`d2lpar.torch.checkpoint.load_checkpoint`).
"""

import json
import os
import zipfile

import numpy as onp

CHECKPOINT_FORMAT = 'd2lpar-checkpoint-1'


class CheckpointError(ValueError):
    """A checkpoint cannot be used; the message names it and what to do."""


def to_numpy(array):
    """A NumPy copy of an MXNet array, a PyTorch tensor or a NumPy array
    (on any device; a tensor that requires grad is detached first)."""
    if hasattr(array, 'asnumpy'):  # MXNet
        return array.asnumpy()
    if hasattr(array, 'detach'):  # PyTorch
        return array.detach().to('cpu').numpy()
    return onp.asarray(array)


def save_checkpoint(params, path, epoch, num_workers):
    """Write a checkpoint atomically: to a temporary file, then rename.

    A crash while writing, of the process or of the machine, leaves the
    previous checkpoint intact, never a half-written one: the file's
    bytes reach the disk (``fsync``) before the rename, and the rename
    reaches it before this returns (``fsync`` of the folder). Besides the arrays it records the finished
    ``epoch``, the job's ``num_workers`` and the arrays' shapes, so that
    :func:`read_checkpoint` can refuse a run it does not belong to.
    ``params`` are MXNet arrays or PyTorch tensors (:func:`to_numpy`).
    """
    meta = {
        'format': CHECKPOINT_FORMAT,
        'epoch': int(epoch),
        'num_workers': int(num_workers),
        'shapes': [list(p.shape) for p in params],
    }
    arrays = {f'param_{i}': to_numpy(p) for i, p in enumerate(params)}
    tmp = f'{path}.tmp-{os.getpid()}'
    with open(tmp, 'wb') as f:
        onp.savez(f, meta=onp.array(json.dumps(meta)), **arrays)
        f.flush()
        os.fsync(f.fileno())  # else a power loss can leave an empty file
    os.replace(tmp, path)
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself, on disk
    finally:
        os.close(folder)


def read_checkpoint(path, num_workers=None, shapes=None):
    """Return ``(arrays, finished_epochs)`` from :func:`save_checkpoint`:
    NumPy arrays and an int.

    Parameters
    ----------
    path : str
    num_workers : int, optional
        Refuse a checkpoint written by a job of another size.
    shapes : list of tuple, optional
        Refuse a checkpoint of another model (e.g. LeNet's shapes).

    Raises
    ------
    CheckpointError
        If the file is corrupt, truncated, not a d2lpar checkpoint, or
        belongs to another number of workers or another model.
    """
    meta, arrays = _read(path)
    saved = [tuple(s) for s in meta['shapes']]
    if shapes is not None and saved != [tuple(s) for s in shapes]:
        raise CheckpointError(
            f'{path} holds a model with shapes {saved}, not {list(shapes)}'
            f'; resume only the model it was written for, or delete it '
            f'to start afresh'
        )
    if num_workers is not None and meta['num_workers'] != num_workers:
        raise CheckpointError(
            f'{path} was written by a job of {meta["num_workers"]} '
            f'workers, not {num_workers}: the global batch and the data '
            f'order would differ. Resume with --workers '
            f'{meta["num_workers"]}, or delete it to start afresh'
        )
    return arrays, meta['epoch']


def _read(path):
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
    return meta, arrays
