"""PyTorch's rows of ``python -m d2lpar bench train`` (issue 29).

The same LeNet, the same global batch and plain SGD as the MXNet rows of
:mod:`d2lpar.bench.train`, timed the same way (the second of two passes
over ``steps`` minibatches of the real data, through the shared epoch
loop :func:`d2lpar.epochs.run_epochs`, which waits for the last step),
each measurement in a fresh process of its own:

- ``torch`` on 1 device: :func:`d2lpar.torch.train` in one process with
  one thread per core;
- ``torch`` on 2 devices: the same with the hand-written data-parallel
  step on two CPU "devices" (they take turns on every core; see
  :mod:`d2lpar.torch.devices`);
- ``torch-ddp`` on 2 devices: two processes, each with its share of the
  cores, its half of every minibatch and ``DistributedDataParallel``
  over Gloo (the worker of ``launch --engine torch``:
  :class:`d2lpar.torch.worker.Worker`); the slower process's time.
  LeNet's gradients (about 0.5 MB) fit in DDP's first bucket (1 MiB;
  later buckets 25 MiB), so DDP sends them in one allreduce when the
  backward pass has produced the last of them: for this model nothing
  of its communication overlaps the backward pass.

A fresh process, started with ``python -m``, not the spawn of
:func:`d2lpar.bench.step.in_fresh_process_each`: that child imports the
parent's main module, and importing MXNet sets PyTorch's threads to one
in the process (measured). Each child says whether MXNet was imported
and how many threads PyTorch ran on, and sets them explicitly.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

# (path, devices) of every PyTorch row, in the order of one round.
ROWS = (('torch', 1), ('torch', 2), ('torch-ddp', 2))

# What each row's ms/step holds beyond the step (printed under the table).
HOLDS = {
    'd2l': "d2l's DataLoader (4 worker processes) handing over each "
    'batch, the split and copies, a waitall after every step',
    'd2lpar': "a batch from the library's in-memory DataLoader (Gluon's, "
    'no worker process, collating example by example), loss and accuracy '
    'sums; on 2 or more devices also the split and the allreduce (copies '
    'and adds in one process)',
    'torch': "a batch from d2lpar.torch's in-memory DataLoader (PyTorch's, "
    'no worker process, collating example by example), loss and accuracy '
    'sums; on 2 devices also the split and the hand-written allreduce '
    '(adds in memory), the devices taking turns, each on every core',
    'torch-ddp': 'each process: the same DataLoader batch, its half of it, '
    "DDP's Gloo allreduce over loopback (LeNet's gradients fill one "
    'bucket, sent once the backward pass is done: nothing overlaps), '
    'loss and accuracy sums; the slower process counts',
}


def torch_missing():
    """Why the PyTorch rows cannot run here, or None when they can."""
    if importlib.util.find_spec('torch') is None:
        return (
            'PyTorch rows skipped: torch is not installed (pip install '
            '"d2lpar[torch]")'
        )
    return None


def _cores():
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _loaders(batch_size, steps):
    from ..torch.data import load_fashion_mnist

    # seed: every DDP process reads the same minibatches (its own half).
    return load_fashion_mnist(
        batch_size, num_train=batch_size * steps, num_test=batch_size, seed=0
    )


def _single(num_devices, batch_size, steps, threads):
    """Seconds of the second pass of :func:`d2lpar.torch.train`."""
    import torch

    from .. import torch as tdp

    torch.set_num_threads(threads)
    train_iter, test_iter = _loaders(batch_size, steps)
    result = tdp.train(
        devices=tdp.devices(num_devices),
        data=(train_iter, test_iter),
        num_epochs=2,
        plot=False,
        verbose=False,
    )
    return result.epoch_seconds[1]


def _ddp(rank, world, store, batch_size, steps, threads):
    """One DDP process: seconds of its second pass."""
    import torch
    import torch.distributed as dist

    from ..epochs import TrainResult, run_epochs
    from ..torch.model import init_lenet_params
    from ..torch.training import INIT_SCALE, wait_for
    from ..torch.worker import Shards, Worker

    torch.set_num_threads(threads)
    dist.init_process_group(
        'gloo', init_method=f'file://{store}', rank=rank, world_size=world
    )
    try:
        cpu = torch.device('cpu')
        train_iter, test_iter = _loaders(batch_size, steps)
        shards = Shards(train_iter, rank, world)
        params = init_lenet_params(0, INIT_SCALE)
        job = Worker(params, 0.2, shards, test_iter, None, True, cpu)
        result = TrainResult([], [], [cpu], batch_size, 0.2)
        run_epochs(job.step, shards, job.evaluate, 2, result,
                   wait=wait_for([cpu]))  # fmt: skip
        return result.epoch_seconds[1]
    finally:
        dist.destroy_process_group()


def _main(argv):
    """``python -m d2lpar.bench.torch_train JSON``: print one JSON line."""
    spec = json.loads(argv[0])
    if spec['kind'] == 'single':
        seconds = _single(
            spec['devices'], spec['batch_size'], spec['steps'],
            spec['threads'],
        )  # fmt: skip
    else:
        seconds = _ddp(
            spec['rank'], spec['world'], spec['store'], spec['batch_size'],
            spec['steps'], spec['threads'],
        )  # fmt: skip
    import torch

    print(json.dumps(dict(
        seconds=seconds, threads=torch.get_num_threads(),
        mxnet='mxnet' in sys.modules,
    )))  # fmt: skip


def _start(spec):
    return subprocess.Popen(
        [sys.executable, '-m', __name__, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(procs, timeout):
    """Every child's JSON line; a failed or slow child is an error (and
    none is left running)."""
    try:
        outs = [p.communicate(timeout=timeout) for p in procs]
    except subprocess.TimeoutExpired:
        raise TimeoutError(
            f'a PyTorch measurement took longer than {timeout} s; it was '
            f'stopped'
        ) from None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0 or not out.strip():
            raise RuntimeError(
                f'a PyTorch measurement failed (status {p.returncode}):\n'
                f'{err[-3000:]}'
            )
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def measure(path, num_devices, batch_size, steps, timeout=600):
    """One PyTorch row's measurement, in fresh processes.

    Returns
    -------
    dict
        ``seconds`` (of the timed pass; the slower process for DDP),
        ``threads`` PyTorch ran on per process, ``processes``, ``mxnet``
        (whether any of them had imported MXNet).
    """
    cores = _cores()
    if path == 'torch':
        spec = dict(kind='single', devices=num_devices,
                    batch_size=batch_size, steps=steps, threads=cores)  # fmt: skip
        runs = _finish([_start(spec)], timeout)
    elif path == 'torch-ddp':
        world, threads = num_devices, max(1, cores // num_devices)
        with tempfile.TemporaryDirectory(prefix='d2lpar-ddp-') as folder:
            store = os.path.join(folder, 'store')
            common = dict(kind='ddp', world=world, store=store,
                          batch_size=batch_size, steps=steps,
                          threads=threads)  # fmt: skip
            procs = [_start(dict(common, rank=r)) for r in range(world)]
            runs = _finish(procs, timeout)
    else:
        raise ValueError(f'measure: unknown PyTorch path {path!r}')
    return dict(
        seconds=max(r['seconds'] for r in runs),
        threads=runs[0]['threads'],
        processes=len(runs),
        mxnet=any(r['mxnet'] for r in runs),
    )


# The ratios the issue sets targets for: (label, a, b, target) with a
# and b (path, devices); a/b per round.
TARGETS = (
    ('hand-written PyTorch step / DDP, 2 devices',
     ('torch', 2), ('torch-ddp', 2), 1.1),
    ('MXNet library / PyTorch, 1 device', ('d2lpar', 1), ('torch', 1), 1.1),
    ('MXNet library / PyTorch DDP, 2 devices',
     ('d2lpar', 2), ('torch-ddp', 2), 1.1),
    ('MXNet library / PyTorch hand-written, 2 devices',
     ('d2lpar', 2), ('torch', 2), 1.1),
)  # fmt: skip


def ratios(rows):
    """Each target's ratio in every round (rounds measured side by side).

    Returns
    -------
    list of dict
        ``label``, ``target``, ``rounds`` (a/b per round), ``median``,
        ``within`` (rounds at or under the target); a pair with a row
        missing is left out.
    """
    import statistics

    by = {(r['path'], r['devices']): r['rounds'] for r in rows}
    found = []
    for label, a, b, target in TARGETS:
        if a not in by or b not in by:
            continue
        each = [x / y for x, y in zip(by[a], by[b])]
        found.append(dict(
            label=label, target=target, rounds=each,
            median=statistics.median(each),
            within=sum(r <= target for r in each),
        ))  # fmt: skip
    return found


def format_ratios(found):
    """One line per ratio: median, every round, rounds within target."""
    lines = []
    for f in found:
        each = ' '.join(f'{r:.2f}' for r in f['rounds'])
        lines.append(
            f'{f["label"]}: {f["median"]:.2f}x (rounds: {each}; '
            f'{f["within"]} of {len(f["rounds"])} within '
            f'{f["target"]:g}x)'
        )
    return lines


if __name__ == '__main__':
    _main(sys.argv[1:])
