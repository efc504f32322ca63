"""One worker of multi-process data parallelism.

Started by :func:`d2lpar.dist.launch.launch` on MXNet's parameter server, or
by ``horovodrun`` on Horovod (``python -m d2lpar worker --engine ...``).
Every worker reads the same seeded order of global minibatches and
trains on its own shard of each, so the workers together take the step
one process would take on the whole minibatch.
"""
import json
import os

import mxnet as mx
import numpy as onp
from d2l import mxnet as d2l
from mxnet import autograd, np, npx

from ..data import load_fashion_mnist
from .engines import make_engine
from ..model import init_lenet_params, lenet
from ..parameters import get_params
from ..splitting import shard_sizes
from ..training import cross_entropy

ACC_KEY = 1000  # kvstore key for the (correct, total) evaluation counts


def my_shard(X, y, rank, num_workers):
    """Worker ``rank``'s contiguous shard of a global minibatch."""
    sizes = shard_sizes(X.shape[0], num_workers)
    start = sum(sizes[:rank])
    return X[start:start + sizes[rank]], y[start:start + sizes[rank]]


def worker_step(engine, X, y, params, lr):
    """Local gradients, summed over all workers by the engine."""
    with autograd.record():
        l = cross_entropy(lenet(X, params), y).sum()
    l.backward()
    engine.sum_([p.grad for p in params])
    return l


def global_accuracy(engine, params, test_iter):
    """Test accuracy over all workers' shards, combined by the engine."""
    counts = np.zeros(2)
    for X, y in test_iter:
        Xs, ys = my_shard(X, y, engine.rank, engine.num_workers)
        counts += np.array([d2l.accuracy(lenet(Xs, params), ys), ys.size])
    engine.sum_([counts], first_key=ACC_KEY)
    return float(counts[0] / counts[1])


def save_params(params, path, epoch=0):
    """Write a checkpoint atomically: to a temporary file, then rename.

    A crash while writing leaves the previous checkpoint intact, never a
    half-written one. Arrays are ``arr_0`` ... ``arr_7``; ``epoch`` is
    the number of finished epochs.
    """
    tmp = f'{path}.tmp-{os.getpid()}'
    with open(tmp, 'wb') as f:
        onp.savez(f, *[p.asnumpy() for p in params], epoch=epoch)
    os.replace(tmp, path)


def load_checkpoint(path):
    """Return ``(params, finished_epochs)`` from :func:`save_params`."""
    with onp.load(path) as saved:
        params = [np.array(saved[f'arr_{i}']) for i in range(8)]
        return params, int(saved['epoch'])


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
    """
    engine = make_engine(engine, os.environ.get('D2LPAR_KVSTORE',
                                                'dist_sync'))
    rank, nw = engine.rank, engine.num_workers
    params, done = init_lenet_params(seed, init_scale), 0
    if resume and save_to and os.path.exists(save_to):
        params, done = load_checkpoint(save_to)
        print(f'rank {rank}: resuming after epoch {done}', flush=True)
    params = get_params(params, mx.cpu())
    engine.broadcast_(params)  # every worker starts from rank 0's values
    train_iter, test_iter = load_fashion_mnist(
        batch_size * nw, data_dir, num_train=num_train, num_test=num_test,
        seed=seed, start_epoch=done)
    stats = {'engine': engine.name, 'workers': nw, 'epochs': []}
    for epoch in range(done, epochs):
        timer, steps = d2l.Timer(), 0
        for X, y in train_iter:
            worker_step(engine, *my_shard(X, y, rank, nw), params, lr)
            d2l.sgd(params, lr, X.shape[0])
            steps += 1
        npx.waitall()
        seconds = timer.stop()
        acc = global_accuracy(engine, params, test_iter)
        stats['epochs'].append({'steps': steps, 'seconds': seconds,
                                'test_acc': acc})
        print(f'rank {rank}/{nw} epoch {epoch + 1}: test acc {acc:.3f}, '
              f'{seconds:.1f} sec', flush=True)
        if rank == 0 and save_to:
            save_params(params, save_to, epoch + 1)
    if rank == 0 and stats_to:
        with open(stats_to, 'w') as f:
            json.dump(stats, f)
    return [e['test_acc'] for e in stats['epochs']]
