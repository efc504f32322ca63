"""One worker of a multi-process PyTorch job (``torch.distributed``).

Started by :func:`d2lpar.torch.launch.launch` (``python -m d2lpar launch
--engine torch --workers N -- python -m d2lpar worker --engine torch``),
or by ``torchrun``: PyTorch's launcher sets ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT``, so ``dist.init_process_group()``
needs no argument. As the MXNet worker (:mod:`d2lpar.multiprocess.worker`)
does, every worker reads the same seeded order of global minibatches,
trains on its own contiguous shard of each, and the workers together take
the step one process would take on the whole minibatch; rank 0 writes a
checkpoint after every epoch and a resumed job continues from it.

Two ways to sum the gradients, the same step:

- by hand (the default): after the backward pass, one
  ``dist.all_reduce(p.grad)`` per parameter sums every worker's gradient,
  and each worker applies ``p -= lr * grad / global_batch``, the
  allreduce of the chapters over PyTorch's own collective;
- ``--ddp``: the parameters in a module wrapped in
  ``DistributedDataParallel``, which averages the gradients over the
  workers during the backward pass (in buckets, which can overlap the
  communication with the backward; LeNet's gradients fit in DDP's first
  bucket, so here it sends them once the backward pass is done); the
  step then multiplies by the number of workers, so the update is the
  same.
"""

import os

import torch
import torch.distributed as dist

from ..workers import Shards, WorkerLoop, load_shards, my_shard, resume_from
from .data import load_fashion_mnist
from .model import LENET_SHAPES, init_lenet_params, lenet
from .training import cross_entropy, sgd, wait_for

__all__ = [
    'LeNet',
    'Shards',
    'Worker',
    'my_shard',
    'pick_backend',
    'pick_device',
    'run_worker',
    'share_cores',
    'start_state',
]


class LeNet(torch.nn.Module):
    """The chapter's LeNet function with its 8 tensors as parameters of a
    module: what ``DistributedDataParallel`` wraps."""

    def __init__(self, params):
        super().__init__()
        self.params = torch.nn.ParameterList(
            torch.nn.Parameter(p.detach().clone()) for p in params
        )

    def forward(self, X):
        return lenet(X, list(self.params))


def share_cores(num_workers):
    """Give this worker its share of the machine's cores (at least one):
    ``num_workers`` processes each running every core's threads on the
    same cores would wait for each other in every operator. Unless
    ``OMP_NUM_THREADS`` is set. Returns the threads."""
    if os.environ.get('OMP_NUM_THREADS'):
        return torch.get_num_threads()
    if hasattr(os, 'sched_getaffinity'):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    threads = max(1, cores // num_workers)
    torch.set_num_threads(threads)
    return threads


def pick_device(rank):
    """This worker's device: its own GPU where there is one per worker on
    the machine, else the CPU."""
    local = int(os.environ.get('LOCAL_RANK', rank))
    if torch.cuda.is_available() and local < torch.cuda.device_count():
        return torch.device('cuda', local)
    return torch.device('cpu')


def pick_backend(devices):
    """The process group's backend for workers on ``devices`` (one per
    process): NCCL, which sums GPU tensors on the GPUs, when every one
    is a CUDA device; else Gloo, which sums CPU tensors (NCCL cannot)
    and CUDA ones too. Every process of a group must pick the same."""
    cuda = [torch.device(d).type == 'cuda' for d in devices]
    return 'nccl' if cuda and all(cuda) else 'gloo'


def start_state(rank, num_workers, seed, init_scale, save_to, resume, device):
    """Rank 0's parameters and finished epochs, on every worker (rank 0
    reads the checkpoint; a broadcast gives it to the others)."""
    saved, done = resume_from(
        rank, num_workers, save_to, resume, [s for _, s in LENET_SHAPES]
    )
    if saved is None:
        params = init_lenet_params(seed, init_scale)
    else:
        params = [torch.from_numpy(a) for a in saved]
    params = [p.to(device) for p in params]
    progress = torch.tensor([float(done)], device=device)
    for t in params + [progress]:
        dist.broadcast(t, src=0)
    return params, int(progress.item())


class Worker(WorkerLoop):
    """What :func:`d2lpar.epochs.run_epochs` calls on one PyTorch
    worker: the step and the global test accuracy; what happens after
    each epoch (count steps, record stats, save rank 0's checkpoint,
    print) is :class:`d2lpar.workers.WorkerLoop`'s."""

    def __init__(self, params, lr, shards, test_iter, save_to, ddp, device):
        self.model = LeNet(params).to(device)
        super().__init__(
            dist.get_rank(), dist.get_world_size(), list(self.model.params),
            shards, save_to, 'torch-ddp' if ddp else 'torch',
        )  # fmt: skip
        self.world = self.num_workers
        self.lr, self.test_iter = lr, test_iter
        self.ddp, self.device = ddp, device
        self.net = self.model
        if ddp:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model,
                device_ids=[device] if device.type == 'cuda' else None,
            )

    def step(self, X, y):
        """Train on this worker's shard ``X, y``; (losses, corrects)."""
        self.steps += 1
        X, y = X.to(self.device), y.to(self.device)
        for p in self.params:
            p.grad = None
        logits = self.net(X)
        l = cross_entropy(logits, y).sum()
        l.backward()  # with DDP: the gradients come back averaged
        batch = self.shards.batch_size  # the global minibatch
        if self.ddp:
            sgd(self.params, self.lr * self.world, batch)
        else:
            for p in self.params:  # the allreduce, one call per gradient
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            sgd(self.params, self.lr, batch)
        with torch.no_grad():
            correct = (logits.argmax(dim=1) == y).sum()
        return [l.detach()], [correct]

    @torch.no_grad()
    def evaluate(self):
        """Test accuracy over all workers' shards, summed by allreduce."""
        counts = torch.zeros(2, dtype=torch.float64, device=self.device)
        for X, y in self.test_iter:
            Xs, ys = my_shard(X, y, self.rank, self.world)
            Xs, ys = Xs.to(self.device), ys.to(self.device)
            counts[0] += (self.model(Xs).argmax(dim=1) == ys).sum()
            counts[1] += ys.numel()
        dist.all_reduce(counts, op=dist.ReduceOp.SUM)
        return (counts[0] / counts[1]).item()


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
    ddp=False,
    stats_to=None,
):
    """Train LeNet as one worker of a ``torch.distributed`` job.

    Taught in :doc:`/book/multiprocess`. The arguments are those of
    :func:`d2lpar.multiprocess.run_worker`, with ``ddp`` choosing
    ``DistributedDataParallel`` over the hand-written allreduce.

    Parameters
    ----------
    epochs : int, optional
        The last epoch (a resumed run trains the remaining ones).
    batch_size : int, optional
        Examples per worker per step (the global minibatch is
        ``batch_size * num_workers``).
    lr : float, optional
        Learning rate.
    seed : int, optional
        Seed of the initial parameters and of the data order.
    init_scale : float, optional
        Standard deviation of the initial weights.
    data_dir : str, optional
        Folder with the Fashion-MNIST files.
    num_train : int, optional
        Keep only the first ``num_train`` training examples; by default
        all of them.
    num_test : int, optional
        Keep only the first ``num_test`` test examples.
    save_to : str, optional
        Rank 0 writes a checkpoint here after every epoch.
    resume : bool, optional
        Start from the checkpoint in ``save_to``, if it is there.
    ddp : bool, optional
        Sum the gradients with ``DistributedDataParallel``.
    stats_to : str, optional
        Rank 0 writes the engine, workers, threads, the seconds in all
        and each epoch's steps, seconds, test accuracy and train loss
        here as JSON.

    Returns
    -------
    list of float
        Test accuracy after each epoch.

    Raises
    ------
    RuntimeError
        When not started by a launcher (no ``RANK``/``WORLD_SIZE``).
    CheckpointError
        When resuming from a checkpoint that is unreadable or belongs to
        another job (on rank 0; the launcher then stops the others).
    """
    if 'RANK' not in os.environ or 'WORLD_SIZE' not in os.environ:
        raise RuntimeError(
            'the torch engine runs inside a torch.distributed job: start '
            'the workers with `python -m d2lpar launch --engine torch '
            '--workers 2 -- python -m d2lpar worker --engine torch ...` '
            '(or torchrun)'
        )
    device = pick_device(int(os.environ['RANK']))
    dist.init_process_group(pick_backend([device]))
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        threads = share_cores(world)
        params, done = start_state(
            rank, world, seed, init_scale, save_to, resume, device
        )
        shards, test_iter = load_shards(
            load_fashion_mnist, rank, world, batch_size, done,
            data_dir=data_dir, num_train=num_train, num_test=num_test,
            seed=seed,
        )  # fmt: skip
        job = Worker(params, lr, shards, test_iter, save_to, ddp, device)
        job.stats['threads'] = threads
        dist.barrier()  # every worker starts the clock together
        return job.train(
            epochs, done, device, batch_size * world, lr, stats_to,
            wait=wait_for([device]),
        )  # fmt: skip
    finally:
        dist.destroy_process_group()
