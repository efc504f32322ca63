"""The concise version in PyTorch: DistributedDataParallel.

The twin of :mod:`d2lpar.techniques.concise` (Gluon's ``Trainer``), taught
in :doc:`/book/concise`. PyTorch's own way to train on several devices is
one process per device: each process wraps its replica of the model in
``torch.nn.parallel.DistributedDataParallel`` (DDP), which averages the
gradients over the processes during the backward pass (Gloo on CPUs, NCCL
on GPUs), and ``torch.optim.SGD`` then takes the step. One Python process
cannot be several ranks of a DDP job, so :func:`spawn` starts the
processes: every function here that trains runs in them.
"""

import os
import pickle
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ..epochs import TrainResult, run_epochs
from ..validation import check_positive
from ..workers import Shards, my_shard
from .data import load_fashion_mnist
from .model import init_lenet_params
from .training import INIT_SCALE, cross_entropy, wait_for
from .worker import LeNet, Worker, pick_backend, pick_device, share_cores

__all__ = [
    'ddp',
    'ddp_steps',
    'run_rank',
    'spawn',
    'train_batch',
    'train_concise',
]


def train_batch(X, y, net, optimizer, loss=cross_entropy):
    """One data-parallel step with DDP, on this process's shard ``X, y``.

    Taught in :doc:`/book/concise`. ``net`` is wrapped in DDP, so
    ``backward`` leaves in every process's gradients their average over
    the processes; with the loss averaged over the shard, that is the
    gradient of the mean loss over the whole minibatch (when the shards
    are equal), and ``optimizer.step()`` (SGD with learning rate ``lr``)
    takes the step of :func:`d2lpar.torch.train_batch`.

    Returns
    -------
    losses, corrects : list of torch.Tensor
        This shard's summed loss and number of correct predictions.
    """
    optimizer.zero_grad()
    logits = net(X)
    l = loss(logits, y)
    l.mean().backward()  # DDP: gradients averaged over the processes
    optimizer.step()
    with torch.no_grad():
        correct = (logits.argmax(dim=1) == y).sum()
    return [l.detach().sum()], [correct]


def run_rank(rank, fn, world, store, out, args):
    """One process of :func:`spawn`: take this process's share of the
    cores, join the group of ``world`` processes (they meet through the
    file ``store``; NCCL where every process has a GPU, else Gloo, as
    :func:`d2lpar.torch.worker.pick_backend` says), run ``fn(*args)``;
    rank 0 writes the result to the file ``out``."""
    share_cores(world)
    backend = pick_backend([pick_device(r) for r in range(world)])
    dist.init_process_group(
        backend, init_method=f'file://{store}', rank=rank, world_size=world
    )
    # Every process has its connections before any runs fn: else one
    # that fails at once can close them while another still connects,
    # and that one's connection error hides fn's.
    dist.barrier()
    try:
        result = fn(*args)
        if rank == 0:
            with open(out, 'wb') as f:
                pickle.dump(result, f)
    finally:
        dist.destroy_process_group()


def _start_method():
    # A fork server imports PyTorch and this module once, then forks a
    # fresh process for each worker of every job: a job starts in a
    # fraction of a second instead of each process importing PyTorch.
    # It has run no operator, so each child sets its own threads.
    # Windows has no fork: spawn there.
    if 'forkserver' not in mp.get_all_start_methods():
        return 'spawn'
    mp.get_context('forkserver').set_forkserver_preload([__name__])
    return 'forkserver'


def spawn(fn, workers, *args):
    """Run ``fn(*args)`` in ``workers`` new processes, one group.

    Each process gets its share of the cores
    (:func:`d2lpar.torch.worker.share_cores`) and joins the group
    (``torch.distributed`` is initialised, ``dist.get_rank()`` tells it
    which it is; with a GPU per process the group is NCCL's, so ``fn``
    places its tensors on :func:`d2lpar.torch.worker.pick_device`'s
    device) before it calls ``fn``. ``fn`` must be importable (a
    module's function, not a notebook's): the processes are not forks of
    the caller but of a server process that has imported PyTorch and this
    module and run nothing else (``forkserver``; *spawn* where there is
    no fork, on Windows).

    Returns
    -------
    object
        What ``fn`` returned in rank 0.

    Raises
    ------
    torch.multiprocessing.ProcessRaisedException
        When a process raised (the others are stopped).
    """
    check_positive('workers', workers, 'spawn', integer=True)
    with tempfile.TemporaryDirectory(prefix='d2lpar-spawn-') as tmp:
        store, out = os.path.join(tmp, 'store'), os.path.join(tmp, 'out')
        mp.start_processes(
            run_rank,
            args=(fn, workers, store, out, args),
            nprocs=workers,
            start_method=_start_method(),
        )
        with open(out, 'rb') as f:
            return pickle.load(f)


def ddp(params, device=None):
    """LeNet with ``params``' values as a module wrapped in DDP (its
    construction copies rank 0's values to every process)."""
    model = LeNet(params).to(device or torch.device('cpu'))
    return torch.nn.parallel.DistributedDataParallel(model)


def _steps(starts, batches, lr):
    rank, world = dist.get_rank(), dist.get_world_size()
    device = pick_device(rank)
    after = []
    for start, (X, y) in zip(starts, batches):
        net = ddp(start, device)
        optimizer = torch.optim.SGD(net.parameters(), lr=lr)
        X, y = my_shard(X, y, rank, world)
        train_batch(X.to(device), y.to(device), net, optimizer)
        after.append(
            [p.detach().to('cpu', copy=True) for p in net.module.params]
        )
    return after


def ddp_steps(starts, batches, lr, workers=2):
    """Take one DDP step from each start, on ``workers`` processes.

    Taught in :doc:`/book/concise`: step ``i`` starts from the values
    ``starts[i]`` and trains on ``batches[i]``, each process on its
    contiguous shard (:func:`d2lpar.workers.my_shard`).

    Parameters
    ----------
    starts : list of list of torch.Tensor
        LeNet's 8 tensors before each step.
    batches : list of (X, y)
        One global minibatch per step.
    lr : float
    workers : int, optional

    Returns
    -------
    list of list of torch.Tensor
        Rank 0's parameters after each step.
    """
    check_positive('lr', lr, 'ddp_steps')
    starts = [[p.detach().cpu() for p in start] for start in starts]
    return spawn(_steps, workers, starts, list(batches), lr)


class _ConciseWorker(Worker):
    # The library worker's DDP module and its sharded test accuracy,
    # with the concise step: torch.optim.SGD on the averaged gradients.
    def __init__(self, params, lr, shards, test_iter, device):
        super().__init__(params, lr, shards, test_iter, None, True, device)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=lr)

    def step(self, X, y):
        X, y = X.to(self.device), y.to(self.device)
        return train_batch(X, y, self.net, self.optimizer)


def _train(params, lr, num_epochs, batch_size, num_train, num_test, seed):
    rank, world = dist.get_rank(), dist.get_world_size()
    device = pick_device(rank)
    train_iter, test_iter = load_fashion_mnist(
        batch_size, num_train=num_train, num_test=num_test, seed=seed
    )
    shards = Shards(train_iter, rank, world)
    job = _ConciseWorker(params, lr, shards, test_iter, device)
    result = TrainResult(
        [], [], [pick_device(r) for r in range(world)], batch_size, lr
    )
    result.threads = torch.get_num_threads()  # each process's
    run_epochs(
        job.step, shards, job.evaluate, num_epochs, result,
        where='train_concise', wait=wait_for([device]),
    )  # fmt: skip
    result.params = [p.detach().cpu() for p in job.model.params]
    return result


def train_concise(
    workers=2,
    lr=0.2,
    num_epochs=10,
    params=None,
    batch_size=256,
    *,
    num_train=None,
    num_test=None,
    seed=0,
):
    """Train LeNet with DDP on ``workers`` processes.

    Taught in :doc:`/book/concise`; the twin of
    :func:`d2lpar.train_concise`. Every process reads the same seeded
    order of minibatches of ``batch_size`` examples and trains on its
    contiguous shard of each (so the shards are equal when ``workers``
    divides ``batch_size``); the test accuracy is summed over all
    processes' shards of every test batch.

    Parameters
    ----------
    workers : int, optional
        Processes, each with its share of the cores (a GPU each, where
        there is one per process).
    lr, num_epochs : optional
    params : list of torch.Tensor, optional
        Initial values (default: :func:`d2lpar.torch.init_lenet_params`
        with :data:`d2lpar.torch.INIT_SCALE`, as
        :func:`d2lpar.torch.train`).
    batch_size : int, optional
        The global minibatch.
    num_train, num_test, seed : optional
        As for :func:`d2lpar.torch.load_fashion_mnist`.

    Returns
    -------
    TrainResult
        Rank 0's: its epoch seconds, and the training loss and accuracy
        of its shards; the test accuracy over all processes' shards;
        ``devices``: each process's device; ``threads``: the threads
        each process ran on; ``params``: the trained values.
    """
    check_positive('lr', lr, 'train_concise')
    check_positive('num_epochs', num_epochs, 'train_concise', True)
    check_positive('batch_size', batch_size, 'train_concise', True)
    if params is None:
        params = init_lenet_params(0, INIT_SCALE)
    params = [p.detach().cpu() for p in params]
    return spawn(
        _train, workers, params, lr, num_epochs, batch_size, num_train,
        num_test, seed,
    )  # fmt: skip
