"""One worker of multi-process data parallelism.

Started by :func:`d2lpar.dist.launch.launch` on MXNet's parameter server, or
by ``horovodrun`` on Horovod (``python -m d2lpar worker --engine ...``).
Every worker reads the same seeded order of global minibatches and
trains on its own shard of each, so the workers together take the step
one process would take on the whole minibatch.
"""
import json
import os
import zipfile

import mxnet as mx
import numpy as onp
from d2l import mxnet as d2l
from mxnet import autograd, np, npx

from ..data import load_fashion_mnist
from ..model import LENET_SHAPES, init_lenet_params, lenet
from ..parameters import get_params
from ..splitting import shard_ranges
from ..training import cross_entropy
from .engines import make_engine

# The engine sums arrays by key; the parameters' gradients use keys
# 0, 1, ..., so the evaluation counts take one far beyond them.
COUNTS_KEY = 1000
CHECKPOINT_FORMAT = 'd2lpar-checkpoint-1'


class CheckpointError(ValueError):
    """A checkpoint cannot be used; the message names it and what to do."""


def my_shard(X, y, rank, num_workers):
    """Worker ``rank``'s contiguous shard of a global minibatch."""
    start, stop = shard_ranges(X.shape[0], num_workers)[rank]
    return X[start:stop], y[start:stop]


def worker_step(engine, X, y, params, lr):
    """One SGD step on the global minibatch ``X, y``, as one worker.

    The worker computes the gradient of its own shard, the engine sums
    the gradients over all workers, and every worker applies the same
    update, divided by the global batch size.
    """
    Xs, ys = my_shard(X, y, engine.rank, engine.num_workers)
    with autograd.record():
        l = cross_entropy(lenet(Xs, params), ys).sum()
    l.backward()
    engine.sum_([p.grad for p in params])
    d2l.sgd(params, lr, X.shape[0])


def global_accuracy(engine, params, test_iter):
    """Test accuracy over all workers' shards, combined by the engine."""
    counts = np.zeros(2)
    for X, y in test_iter:
        Xs, ys = my_shard(X, y, engine.rank, engine.num_workers)
        counts += np.array([d2l.accuracy(lenet(Xs, params), ys), ys.size])
    engine.sum_([counts], first_key=COUNTS_KEY)
    return float(counts[0] / counts[1])


def save_checkpoint(params, path, epoch, num_workers):
    """Write a checkpoint atomically: to a temporary file, then rename.

    A crash while writing leaves the previous checkpoint intact, never a
    half-written one. Besides the arrays it records the finished
    ``epoch``, the job's ``num_workers`` and the arrays' shapes, so that
    :func:`load_checkpoint` can refuse a run it does not belong to.
    """
    meta = {'format': CHECKPOINT_FORMAT, 'epoch': int(epoch),
            'num_workers': int(num_workers),
            'shapes': [list(p.shape) for p in params]}
    arrays = {f'param_{i}': p.asnumpy() for i, p in enumerate(params)}
    tmp = f'{path}.tmp-{os.getpid()}'
    with open(tmp, 'wb') as f:
        onp.savez(f, meta=onp.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def load_checkpoint(path, num_workers=None, shapes=None):
    """Return ``(params, finished_epochs)`` from :func:`save_checkpoint`.

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
    meta, arrays = _read_checkpoint(path)
    saved = [tuple(s) for s in meta['shapes']]
    if shapes is not None and saved != [tuple(s) for s in shapes]:
        raise CheckpointError(
            f'{path} holds a model with shapes {saved}, not {list(shapes)}'
            f'; resume only the model it was written for, or delete it '
            f'to start afresh')
    if num_workers is not None and meta['num_workers'] != num_workers:
        raise CheckpointError(
            f'{path} was written by a job of {meta["num_workers"]} '
            f'workers, not {num_workers}: the global batch and the data '
            f'order would differ. Resume with --workers '
            f'{meta["num_workers"]}, or delete it to start afresh')
    return [np.array(a) for a in arrays], meta['epoch']


def _read_checkpoint(path):
    try:
        with onp.load(path, allow_pickle=False) as saved:
            meta = json.loads(str(saved['meta']))
            if meta.get('format') != CHECKPOINT_FORMAT:
                raise KeyError('format')
            arrays = [saved[f'param_{i}']
                      for i in range(len(meta['shapes']))]
    except (ValueError, KeyError, OSError, EOFError,
            zipfile.BadZipFile) as e:
        raise CheckpointError(
            f'{path} is not a readable d2lpar checkpoint ({type(e).__name__}'
            f': {e}); it may be truncated or written by another program. '
            f'Delete it (or pass another --save-to) to start afresh, or '
            f'drop --resume') from e
    return meta, arrays


def start_state(engine, seed, init_scale, save_to, resume):
    """Rank 0's parameters and finished epochs, on every worker.

    Rank 0 starts from fresh parameters, or from its checkpoint when
    resuming; the engine broadcasts both, so only rank 0 reads the file.
    """
    params, done = init_lenet_params(seed, init_scale), 0
    if (engine.rank == 0 and resume and save_to
            and os.path.exists(save_to)):
        params, done = load_checkpoint(
            save_to, engine.num_workers, [s for _, s in LENET_SHAPES])
    params = get_params(params, mx.cpu())
    progress = np.array([float(done)])
    engine.broadcast_(params + [progress])
    return params, int(progress[0])


def run_worker(epochs=1, batch_size=64, lr=0.1, seed=0, init_scale=0.1,
               data_dir=None, num_train=None, num_test=None,
               save_to=None, resume=False, engine='kvstore',
               stats_to=None):
    """Train LeNet as one worker of a multi-process job.

    Parameters
    ----------
    epochs : int
    batch_size : int
        Examples per worker per step (the global batch is
        ``batch_size * num_workers``).
    lr, seed, init_scale : float, int, float
    data_dir : str, optional
        Folder with the Fashion-MNIST files.
    num_train, num_test : int, optional
    save_to : str, optional
        Rank 0 writes a checkpoint here after every epoch (atomically).
    resume : bool, optional
        Start from the checkpoint in ``save_to`` (if there is one): its
        parameters, and the data order of the epoch after it.
    engine : str, optional
        ``'kvstore'`` (MXNet's parameter server, under
        :func:`d2lpar.dist.launch.launch`) or ``'horovod'`` (under
        ``horovodrun``); see :func:`d2lpar.dist.engines.make_engine`.
    stats_to : str, optional
        Rank 0 writes the engine, number of workers, and each epoch's
        steps, seconds and test accuracy here as JSON.

    Returns
    -------
    list of float
        Test accuracy after each epoch.

    Raises
    ------
    CheckpointError
        When resuming from a checkpoint that is unreadable or belongs to
        another job (on rank 0; the launcher then stops the others).
    """
    engine = make_engine(engine, os.environ.get('D2LPAR_KVSTORE',
                                                'dist_sync'))
    rank, num_workers = engine.rank, engine.num_workers
    params, done = start_state(engine, seed, init_scale, save_to, resume)
    if done:
        print(f'rank {rank}: resuming after epoch {done}', flush=True)
    train_iter, test_iter = load_fashion_mnist(
        batch_size * num_workers, data_dir, num_train=num_train,
        num_test=num_test, seed=seed, start_epoch=done)
    stats = {'engine': engine.name, 'workers': num_workers, 'epochs': []}
    for epoch in range(done, epochs):
        timer, steps = d2l.Timer(), 0
        for X, y in train_iter:
            worker_step(engine, X, y, params, lr)
            steps += 1
        npx.waitall()
        seconds = timer.stop()
        acc = global_accuracy(engine, params, test_iter)
        stats['epochs'].append({'steps': steps, 'seconds': seconds,
                                'test_acc': acc})
        print(f'rank {rank}/{num_workers} epoch {epoch + 1}: test acc '
              f'{acc:.3f}, {seconds:.1f} sec', flush=True)
        if rank == 0 and save_to:
            save_checkpoint(params, save_to, epoch + 1, num_workers)
    if rank == 0 and stats_to:
        with open(stats_to, 'w') as f:
            json.dump(stats, f)
    return [e['test_acc'] for e in stats['epochs']]
