"""One worker of multi-process data parallelism.

Started by :func:`d2lpar.multiprocess.launch` on MXNet's parameter server, or
by ``horovodrun`` on Horovod (``python -m d2lpar worker --engine ...``).
Every worker reads the same seeded order of global minibatches and
trains on its own shard of each, so the workers together take the step
one process would take on the whole minibatch (:func:`worker_step`). On
the ``dist_async`` kvstore the servers take the step instead, with each
push as it arrives (:func:`async_step`).
"""

import os
import time

import mxnet as mx
from mxnet import np

# d2l pins numpy 1.23.5; its helpers are written out in _d2l.
from .. import _d2l as d2l
from ..data import load_fashion_mnist
from ..evaluation import evaluate_accuracy
from ..model import LENET_SHAPES, init_lenet_params, lenet
from ..parameters import get_params
from ..threads import share_cores
from ..training import count_correct, device_gradients
from ..workers import Shards, WorkerLoop, load_shards, my_shard, resume_from
from .engines import make_engine
from .loopback import loopback_tx_bytes

__all__ = [
    'COUNTS_KEY',
    'Shards',
    'WorkerEpochs',
    'async_step',
    'global_accuracy',
    'kvstore_mode',
    'largest',
    'my_shard',
    'run_worker',
    'shard_gradients',
    'start_state',
    'worker_step',
]

# The engine sums arrays by key; the parameters' gradients use keys
# 0, 1, ..., so the evaluation counts take one far beyond them.
COUNTS_KEY = 1000


def shard_gradients(X, y, params):
    """Loss and correct count of the shard ``X, y``; gradients in
    ``params[i].grad``."""
    # train_batch's forward and backward, on this worker's one device
    losses, outs = device_gradients([X], [y], [params])
    return losses, count_correct(outs, [y])


def worker_step(engine, X, y, params, lr, batch_size):
    """One synchronous SGD step on a global minibatch, as one worker.

    ``X, y`` is this worker's shard of a minibatch of ``batch_size``
    examples. The worker computes the gradient of its shard, the engine
    sums the gradients over all workers, and every worker applies the
    same update, divided by the global batch size. Returns the shard's
    summed loss and correct count, as :func:`d2lpar.train_batch` does.
    """
    losses, corrects = shard_gradients(X, y, params)
    engine.sum_([p.grad for p in params])
    d2l.sgd(params, lr, batch_size)
    return losses, corrects


def async_step(engine, X, y, params, lr, batch_size):
    """One asynchronous step: push the shard's gradient, pull weights.

    The servers update the weights with the gradient at once (see
    :meth:`ParameterServer.set_optimizer`). Returns the shard's loss and
    correct count, and whether the weights pulled back hold another
    worker's update too (lazy): they differ from ``params`` minus this
    worker's own update by more than a hundredth of that update
    (float32 rounding differs by far less).
    """
    losses, corrects = shard_gradients(X, y, params)
    grads = [p.grad for p in params]
    own = [p - lr / batch_size * g for p, g in zip(params, grads)]
    step = largest([p - o for p, o in zip(params, own)])
    engine.update_(grads, params, batch_size)
    foreign = largest([p - o for p, o in zip(params, own)])
    return losses, corrects, foreign > 0.01 * step


def largest(arrays):
    """The largest absolute entry of all ``arrays`` (lazy, no wait)."""
    return np.stack([np.abs(a).max() for a in arrays]).max()


def global_accuracy(engine, params, test_iter):
    """Test accuracy over all workers' shards, combined by the engine."""
    counts = np.zeros(2)
    for X, y in test_iter:
        Xs, ys = my_shard(X, y, engine.rank, engine.num_workers)
        counts += np.array([d2l.accuracy(lenet(Xs, params), ys), ys.size])
    engine.sum_([counts], first_key=COUNTS_KEY)
    return float(counts[0] / counts[1])


def start_state(engine, seed, init_scale, save_to, resume):
    """Rank 0's parameters and finished epochs, on every worker.

    Rank 0 starts from fresh parameters, or from its checkpoint when
    resuming; the engine broadcasts both, so only rank 0 reads the file.
    """
    saved, done = resume_from(
        engine.rank, engine.num_workers, save_to, resume,
        [s for _, s in LENET_SHAPES],
    )  # fmt: skip
    if saved is None:
        params = init_lenet_params(seed, init_scale)
    else:
        params = [np.array(a) for a in saved]
    params = get_params(params, mx.cpu())
    progress = np.array([float(done)])
    engine.broadcast_(params + [progress])
    return params, int(progress[0])


class WorkerEpochs(WorkerLoop):
    """What :func:`d2lpar.epochs.run_epochs` calls on one MXNet worker.

    The step (:func:`worker_step`, or :func:`async_step` on
    ``dist_async``) and the test accuracy; what happens after each
    epoch (count steps, record stats, save rank 0's checkpoint, print)
    is :class:`d2lpar.workers.WorkerLoop`'s, with the loopback's bytes
    and, on ``dist_async``, the steps interleaved with another worker's
    update added.
    """

    def __init__(self, engine, params, lr, shards, test_iter, save_to):
        super().__init__(
            engine.rank, engine.num_workers, params, shards, save_to,
            engine.name, engine.asynchronous,
        )  # fmt: skip
        self.engine, self.lr, self.test_iter = engine, lr, test_iter
        self.interleaved, self.waited = 0, 0.0

    def step(self, X, y):
        """Train on this worker's shard ``X, y``; (losses, corrects)."""
        self.steps += 1
        if not self.engine.asynchronous:
            return worker_step(
                self.engine, X, y, self.params, self.lr, self.shards.batch_size
            )
        losses, corrects, interleaved = async_step(
            self.engine, X, y, self.params, self.lr, self.shards.batch_size
        )
        # A lazy count, kept on the device until the epoch ends.
        self.interleaved = interleaved.astype('float32') + self.interleaved
        return losses, corrects

    def evaluate(self):
        """Test accuracy of the weights all workers hold now."""
        if not self.engine.asynchronous:
            return global_accuracy(self.engine, self.params, self.test_iter)
        # No sum on dist_async: every worker gets the servers' weights and
        # tests them on the whole test set. The wait at the barrier is
        # the epoch's time this worker spent ahead of the others.
        start = time.monotonic()
        self.engine.sync_(self.params)
        self.waited = time.monotonic() - start
        return evaluate_accuracy(self.params, self.test_iter, mx.cpu())

    def add_to_record(self, record):
        """The loopback's bytes so far and, on ``dist_async``, the
        interleaved steps and the wait at the barrier; the line names the
        interleaved steps (an upper bound on the stale ones)."""
        # What this network namespace's loopback has sent so far, once the
        # epoch's steps and test sums are done: in a job with a namespace
        # of its own (d2lpar.bench.engines), two epochs' ends apart are
        # one epoch's traffic, without the start-up.
        try:
            record['loopback_bytes'] = loopback_tx_bytes()
        except (OSError, RuntimeError):  # not Linux: nothing to read
            record['loopback_bytes'] = None
        if not self.engine.asynchronous:
            return ''
        record['interleaved_steps'] = int(float(self.interleaved))
        record['wait_seconds'] = self.waited
        self.interleaved = 0
        return (
            f', {record["interleaved_steps"]}/{self.steps} steps interleaved'
        )


def kvstore_mode(kvstore=None):
    """The kvstore mode: ``kvstore``, else the launcher's, else dist_sync.

    Raises
    ------
    ValueError
        If ``kvstore`` differs from the mode the launcher set in
        ``D2LPAR_KVSTORE`` (the workers would disagree with the job).
    """
    launched = os.environ.get('D2LPAR_KVSTORE')
    if kvstore and launched and kvstore != launched:
        raise ValueError(
            f'the worker was given --kvstore {kvstore} but its launcher '
            f'started a {launched} job; give --kvstore once, to launch'
        )
    return kvstore or launched or 'dist_sync'


def run_worker(
    epochs=1,
    batch_size=64,
    lr=0.1,
    seed=0,
    init_scale=0.1,
    data_dir=None,
    num_train=None,
    num_test=None,
    save_to=None,
    resume=False,
    engine='kvstore',
    stats_to=None,
    kvstore=None,
):
    """Train LeNet as one worker of a multi-process job.

    The epoch loop is :func:`d2lpar.epochs.run_epochs`, with
    :class:`WorkerEpochs` as its step, evaluation and epoch end.

    Parameters
    ----------
    epochs : int
        The last epoch (a resumed run trains the remaining ones).
    batch_size : int
        Examples per worker per step (the global batch is
        ``batch_size * num_workers``).
    lr : float
        Learning rate.
    seed : int
        Seed of the initial parameters and of the data order.
    init_scale : float
        Standard deviation of the initial weights.
    data_dir : str, optional
        Folder with the Fashion-MNIST files.
    num_train : int, optional
        Keep only the first ``num_train`` training examples (quick runs,
        tests); by default all of them.
    num_test : int, optional
        Keep only the first ``num_test`` test examples.
    save_to : str, optional
        Rank 0 writes a checkpoint here after every epoch (atomically).
    resume : bool, optional
        Start from the checkpoint in ``save_to`` (if there is one): its
        parameters, and the data order of the epoch after it.
    engine : str, optional
        ``'kvstore'`` (MXNet's parameter server, under
        :func:`d2lpar.multiprocess.launch`) or ``'horovod'`` (under
        ``horovodrun``); see :func:`d2lpar.multiprocess.make_engine`.
    stats_to : str, optional
        Rank 0 writes the engine, number of workers, its OpenMP threads
        (:func:`d2lpar.threads.share_cores`), the seconds in all, and
        each epoch's steps, seconds, test accuracy, train loss (its own
        shards), the loopback's bytes sent so far at its end
        (:func:`d2lpar.multiprocess.loopback_tx_bytes`, None where it
        cannot be read) and, on ``dist_async``, the steps interleaved with
        another worker's update, here as JSON.
    kvstore : str, optional
        The parameter server's mode (see :func:`kvstore_mode`), one of
        :data:`~d2lpar.workers.KVSTORES`.

    Returns
    -------
    list of float
        Test accuracy after each epoch.

    Raises
    ------
    CheckpointError
        When resuming from a checkpoint that is unreadable or belongs to
        another job (on rank 0; the launcher then stops the others).
    ValueError
        For a kvstore mode that the engine or the launcher contradicts.
    """
    engine = make_engine(engine, kvstore_mode(kvstore))
    # The job's workers share this machine's cores (as every job of the
    # book does; on a cluster, set OMP_NUM_THREADS per process instead).
    threads = share_cores(engine.num_workers)
    params, done = start_state(engine, seed, init_scale, save_to, resume)
    shards, test_iter = load_shards(
        load_fashion_mnist, engine.rank, engine.num_workers, batch_size,
        done, data_dir=data_dir, num_train=num_train, num_test=num_test,
        seed=seed,
    )  # fmt: skip
    global_batch = batch_size * engine.num_workers
    if engine.asynchronous:
        engine.set_optimizer(lr, global_batch)
    job = WorkerEpochs(engine, params, lr, shards, test_iter, save_to)
    job.stats['threads'] = threads
    # Every worker starts the clock together: else a worker that loaded
    # its shards first counts the others' start-up in its first steps
    # (measured: rank 0's epoch 0.7 s against rank 1's 0.3 s).
    engine.barrier()
    return job.train(epochs, done, mx.cpu(), global_batch, lr, stats_to)
