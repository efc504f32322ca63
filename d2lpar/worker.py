"""One worker of multi-process data parallelism on MXNet's kvstore.

Started by :func:`d2lpar.launch.launch` (``python -m d2lpar worker``).
Every worker reads the same seeded order of global minibatches and
trains on its own shard of each, so the workers together take the step
one process would take on the whole minibatch.
"""
import os

import mxnet as mx
import numpy as onp
from d2l import mxnet as d2l
from mxnet import autograd, np, npx

from .data import load_fashion_mnist
from .model import init_lenet_params, lenet
from .parameters import get_params
from .splitting import shard_sizes
from .training import cross_entropy

ACC_KEY = 1000  # kvstore key for the (correct, total) evaluation counts


def my_shard(X, y, rank, num_workers):
    """Worker ``rank``'s contiguous shard of a global minibatch."""
    sizes = shard_sizes(X.shape[0], num_workers)
    start = sum(sizes[:rank])
    return X[start:start + sizes[rank]], y[start:start + sizes[rank]]


def sync_initial_params(kv, params):
    """Give every worker rank 0's initial values (kvstore init + pull)."""
    for i, p in enumerate(params):
        kv.init(i, p)  # the servers keep rank 0's value
    kv.init(ACC_KEY, np.zeros(2))
    for i, p in enumerate(params):
        kv.pull(i, out=p)


def worker_step(kv, X, y, params, lr):
    """Local gradients, summed over all workers, then the SGD step."""
    with autograd.record():
        l = cross_entropy(lenet(X, params), y).sum()
    l.backward()
    # Sum over workers. push then pull: pushpull of several keys fails
    # in MXNet 1.9's dist_sync (ps-lite "msg.data.size() >= 2" check).
    for i, p in enumerate(params):
        kv.push(i, p.grad)
    for i, p in enumerate(params):
        kv.pull(i, out=p.grad)
    return l


def global_accuracy(kv, params, test_iter, rank, num_workers):
    """Test accuracy over all workers' shards, combined via the kvstore."""
    counts = np.zeros(2)
    for X, y in test_iter:
        Xs, ys = my_shard(X, y, rank, num_workers)
        counts += np.array([d2l.accuracy(lenet(Xs, params), ys), ys.size])
    kv.push(ACC_KEY, counts)
    kv.pull(ACC_KEY, out=counts)
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
               save_to=None, resume=False):
    """Train LeNet as one worker of a ps-lite job.

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

    Returns
    -------
    list of float
        Test accuracy after each epoch.
    """
    kv = mx.kv.create(os.environ.get('D2LPAR_KVSTORE', 'dist_sync'))
    rank, nw = kv.rank, kv.num_workers
    params, done = init_lenet_params(seed, init_scale), 0
    if resume and save_to and os.path.exists(save_to):
        params, done = load_checkpoint(save_to)
        print(f'rank {rank}: resuming after epoch {done}', flush=True)
    sync_initial_params(kv, params)
    params = get_params(params, mx.cpu())
    train_iter, test_iter = load_fashion_mnist(
        batch_size * nw, data_dir, num_train=num_train, num_test=num_test,
        seed=seed, start_epoch=done)
    accs = []
    for epoch in range(done, epochs):
        timer = d2l.Timer()
        for X, y in train_iter:
            worker_step(kv, *my_shard(X, y, rank, nw), params, lr)
            d2l.sgd(params, lr, X.shape[0])
        npx.waitall()
        seconds = timer.stop()
        accs.append(global_accuracy(kv, params, test_iter, rank, nw))
        print(f'rank {rank}/{nw} epoch {epoch + 1}: test acc '
              f'{accs[-1]:.3f}, {seconds:.1f} sec', flush=True)
        if rank == 0 and save_to:
            save_params(params, save_to, epoch + 1)
    return accs
