"""What every worker of a multi-process job does, in either framework.

The MXNet worker (:mod:`d2lpar.multiprocess.worker`) and the PyTorch
one (:mod:`d2lpar.torch.worker`) differ in their step (how the
gradients are summed over the workers) and in how the test counts are
summed; the rest is written once, here: each worker reads the same
seeded order of global minibatches and trains on its own contiguous
shard of each (:class:`Shards`); the epoch loop is
:func:`d2lpar.epochs.run_epochs`; after each epoch the worker records
it, rank 0 writes the checkpoint (:mod:`d2lpar.checkpoint`) and then
the worker prints the epoch's line (:class:`WorkerLoop`). Imports
neither framework.
"""

import json
import os
import time

from .checkpoint import read_checkpoint, save_checkpoint
from .epochs import TrainResult, run_epochs
from .splitting import shard_ranges

# The one table of MXNet's engine names, with what each is (the command
# line's help reads it; d2lpar.multiprocess.engines makes them). Here,
# not there, so that the command line builds without MXNet.
ENGINES = {
    'kvstore': 'MXNet parameter server (start the job with launch)',
    'horovod': 'ring all-reduce over gloo (start it with horovodrun)',
}

#: The one table of the parameter server's modes (``--kvstore``).
KVSTORES = {
    'dist_sync': "the servers sum every worker's gradient, then each "
    'worker updates its copy (synchronous)',
    'dist_device_sync': "as dist_sync, summing on the workers' devices",
    'dist_async': 'the servers update the weights with each push as it '
    'arrives; workers pull the weights (asynchronous)',
}


def my_shard(X, y, rank, num_workers):
    """Worker ``rank``'s contiguous shard of a global minibatch."""
    start, stop = shard_ranges(X.shape[0], num_workers)[rank]
    return X[start:stop], y[start:stop]


class Shards:
    """This worker's shards of every global minibatch of ``data_iter``.

    Iterating yields ``(X_shard, y_shard)``; ``batch_size`` is then the
    size of the global minibatch the shard came from (the last one may
    be short), which the step divides by.
    """

    def __init__(self, data_iter, rank, num_workers):
        self.data_iter, self.rank = data_iter, rank
        self.num_workers, self.batch_size = num_workers, None

    def __iter__(self):
        for X, y in self.data_iter:
            self.batch_size = X.shape[0]
            yield my_shard(X, y, self.rank, self.num_workers)


def resume_from(rank, num_workers, save_to, resume, shapes):
    """Rank 0's checkpoint to resume from: ``(NumPy arrays, finished
    epochs)``, or ``(None, 0)`` to start afresh (not rank 0, no
    ``resume``, or no file yet). The engine then broadcasts rank 0's
    state, so only rank 0 reads the file.

    Raises
    ------
    d2lpar.checkpoint.CheckpointError
        If the file is unreadable or belongs to another job.
    """
    if rank == 0 and resume and save_to and os.path.exists(save_to):
        return read_checkpoint(save_to, num_workers, shapes)
    return None, 0


def load_shards(load, rank, num_workers, batch_size, start_epoch, **kwargs):
    """The job's data as this worker reads it: ``(Shards, test_iter)``.

    ``load`` is the framework's ``load_fashion_mnist``, called for global
    minibatches of ``batch_size * num_workers`` examples in the seeded
    order of epoch ``start_epoch`` onwards (``kwargs``: ``data_dir`` as
    its ``root``, ``num_train``, ``num_test``, ``seed``). Prints that
    the worker resumes when ``start_epoch`` is not 0.
    """
    if start_epoch:
        print(f'rank {rank}: resuming after epoch {start_epoch}', flush=True)
    train_iter, test_iter = load(
        batch_size * num_workers,
        kwargs.pop('data_dir', None),
        start_epoch=start_epoch,
        **kwargs,
    )
    return Shards(train_iter, rank, num_workers), test_iter


class WorkerLoop:
    """What :func:`d2lpar.epochs.run_epochs` calls on one worker.

    A framework's worker subclasses it with ``step(X, y) -> (losses,
    corrects)`` on this worker's shard and ``evaluate()``, the test
    accuracy over all workers; this class counts the steps and, after
    each epoch, records it in ``stats``, has rank 0 save the checkpoint
    and prints the epoch's line, in that order: once rank 0 has printed
    an epoch, its checkpoint exists (the failures chapter kills a
    server on that line).

    Parameters
    ----------
    rank, num_workers : int
    params : list of arrays
        The parameters rank 0 checkpoints (MXNet's or PyTorch's).
    shards : Shards
    save_to : str or None
        Where rank 0 writes the checkpoint.
    engine : str
        The engine's name, for ``stats``.
    asynchronous : bool, optional
    """

    def __init__(
        self, rank, num_workers, params, shards, save_to, engine,
        asynchronous=False,
    ):  # fmt: skip
        self.rank, self.num_workers = rank, num_workers
        self.params, self.shards, self.save_to = params, shards, save_to
        self.stats = {
            'engine': engine,
            'workers': num_workers,
            'asynchronous': asynchronous,
            'epochs': [],
        }
        self.steps = 0

    def add_to_record(self, record):
        """Add a framework's own numbers to the epoch's ``record``, and
        start them afresh; return what the epoch's line adds."""
        return ''

    def end_epoch(self, result):
        """Record, checkpoint (rank 0) and print the epoch ``result``
        ends with."""
        epoch = result.epochs_done
        record = {
            'steps': self.steps,
            'seconds': result.epoch_seconds[-1],
            'test_acc': result.test_acc[-1],
            'train_loss': result.train_loss[-1],
        }
        line = (
            f'rank {self.rank}/{self.num_workers} epoch {epoch}: '
            f'test acc {record["test_acc"]:.3f}, '
            f'{record["seconds"]:.1f} sec'
        )
        line += self.add_to_record(record)
        self.stats['epochs'].append(record)
        # Checkpoint before the line: once rank 0 has printed an epoch,
        # its checkpoint exists.
        if self.rank == 0 and self.save_to:
            save_checkpoint(self.params, self.save_to, epoch, self.num_workers)
        print(line, flush=True)
        self.steps = 0

    def train(
        self, epochs, start_epoch, device, global_batch, lr, stats_to=None,
        wait=None,
    ):  # fmt: skip
        """Run epochs ``start_epoch + 1`` to ``epochs`` on ``device``;
        rank 0 then writes ``stats``, with the seconds it all took, to
        ``stats_to`` as JSON. ``wait`` is the framework's (see
        :func:`d2lpar.epochs.run_epochs`). Returns the test accuracy
        after each epoch."""
        result = TrainResult([], [], [device], global_batch, lr)
        start = time.monotonic()
        run_epochs(
            self.step,
            self.shards,
            self.evaluate,
            epochs,
            result,
            where='run_worker',
            start_epoch=start_epoch,
            on_epoch_end=self.end_epoch,
            wait=wait,
        )
        self.stats['seconds'] = time.monotonic() - start
        if self.rank == 0 and stats_to:
            with open(stats_to, 'w') as f:
                json.dump(self.stats, f)
        return result.test_acc
