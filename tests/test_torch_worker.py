"""python -m d2lpar worker --engine torch: two workers take one
process's steps (by hand or with DDP), a resumed job reaches the
uninterrupted parameters, checkpoints are the MXNet worker's format."""

import re
import subprocess
import sys

import numpy as onp
import pytest
from conftest import write_fashion_dir
from numpy.testing import assert_allclose, assert_array_equal
from workerjobs import check_resume_matches_uninterrupted

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402
from d2lpar.torch.checkpoint import (  # noqa: E402
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from d2lpar.torch.worker import Shards, pick_backend  # noqa: E402

PY = sys.executable


def run_job(worker_args, workers=2, timeout=240):
    return subprocess.run(
        [PY, '-m', 'd2lpar', 'launch', '--engine', 'torch', '--workers',
         str(workers), '--timeout', str(timeout - 30), '--', PY, '-m',
         'd2lpar', 'worker', '--engine', 'torch', *worker_args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )  # fmt: skip


def test_the_backend_is_nccl_for_gpus_and_gloo_otherwise():
    """Every group (the launched worker's and spawn's) takes its backend
    from the workers' devices: NCCL when all are GPUs, Gloo when any is
    a CPU (NCCL cannot sum CPU tensors; Gloo sums both)."""
    gpus = [torch.device('cuda', 0), torch.device('cuda', 1)]
    assert pick_backend(gpus) == 'nccl'
    assert pick_backend(['cuda']) == 'nccl'
    assert pick_backend([torch.device('cpu')] * 2) == 'gloo'
    assert pick_backend([gpus[0], torch.device('cpu')]) == 'gloo'


def test_shards_cover_each_minibatch_and_know_its_size():
    batches = [(torch.arange(n), torch.arange(n)) for n in (8, 5)]
    shards = [Shards(batches, r, 3) for r in range(3)]
    seen = [list(s) for s in shards]
    for b, (X, _) in enumerate(batches):
        assert torch.equal(torch.cat([seen[r][b][0] for r in range(3)]), X)
    assert shards[0].batch_size == 5  # the last global minibatch's


def test_checkpoints_are_the_mxnet_workers(tmp_path):
    """A checkpoint either worker writes, the other reads: the same
    arrays, epoch and job size; another job's is refused by both."""
    pytest.importorskip('mxnet')
    from d2lpar.multiprocess import checkpoint as mxnet_checkpoint

    params = tdp.init_lenet_params(seed=4, scale=0.1)
    shapes = [s for _, s in tdp.LENET_SHAPES]
    path = str(tmp_path / 'torch.npz')
    save_checkpoint(params, path, epoch=3, num_workers=2)
    theirs, epoch = mxnet_checkpoint.load_checkpoint(path, 2, shapes)
    assert epoch == 3
    for a, b in zip(theirs, params):
        assert_array_equal(a.asnumpy(), b.numpy())
    path = str(tmp_path / 'mxnet.npz')
    mxnet_checkpoint.save_checkpoint(theirs, path, 5, 2)
    mine, epoch = load_checkpoint(path, 2, shapes)
    assert epoch == 5 and all(torch.equal(a, b) for a, b in zip(mine, params))
    with pytest.raises(CheckpointError, match='job of 2 workers, not 3'):
        load_checkpoint(path, 3, shapes)
    with pytest.raises(CheckpointError, match='holds a model with shapes'):
        load_checkpoint(path, 2, shapes[:-1])
    (tmp_path / 'bad.npz').write_bytes(b'not a zip')
    with pytest.raises(CheckpointError, match='not a readable d2lpar'):
        load_checkpoint(str(tmp_path / 'bad.npz'))


def one_process(root, epochs, batch_size):
    """One process, one device, steps of the whole global minibatch in
    the seeded order the workers read."""
    params = tdp.get_params(tdp.init_lenet_params(0, 0.1), torch.device('cpu'))
    train_iter, _ = tdp.load_fashion_mnist(batch_size, str(root), seed=0)
    for _ in range(epochs):
        for X, y in train_iter:
            tdp.train_batch(X, y, [params], [torch.device('cpu')], 0.1)
    return [p.detach().numpy() for p in params]


@pytest.mark.slow
@pytest.mark.parametrize('ddp', [False, True])
def test_two_workers_equal_one_process_with_twice_the_batch(tmp_path, ddp):
    """2 workers with 16 examples each per step, for 2 epochs of 4 steps
    (the last of each 24 examples), end with the parameters of one
    process taking steps of 32 on the same order (rtol 1e-5): the
    hand-written allreduce and DDP alike. (Each step equals one
    process's to float32 rounding; on 88 random images a rounding
    difference of 1e-7 crossed a ReLU's threshold in the fourth step and
    grew to 1e-3, as a 1e-7 nudge to one process's own start does: the
    data here keep the comparison about the engine.)"""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=120, n_test=16)
    saved = tmp_path / 'params.npz'
    job = run_job(
        ['--epochs', '2', '--batch-size', '16', '--lr', '0.1', '--data',
         str(root), '--save-to', str(saved)] + (['--ddp'] if ddp else [])
    )  # fmt: skip
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert '[worker 1] rank 1/2 epoch 2: test acc' in job.stdout
    got, epochs = load_checkpoint(str(saved))
    assert epochs == 2
    want = one_process(root, 2, 32)
    start = tdp.init_lenet_params(0, 0.1)
    assert onp.abs(want[4] - start[4].numpy()).max() > 1e-4
    for g, w in zip(got, want):
        assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_resume_reaches_the_uninterrupted_parameters(tmp_path):
    """1 epoch, then resuming to 3 from its checkpoint, ends with the
    parameters of 3 uninterrupted epochs (rtol 1e-6): the MXNet
    workers' check (workerjobs), on the torch engine."""
    check_resume_matches_uninterrupted(run_job, tmp_path)


@pytest.mark.slow
def test_a_corrupt_checkpoint_ends_the_job_naming_it(tmp_path):
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=32, n_test=8)
    bad = tmp_path / 'bad.npz'
    bad.write_bytes(b'truncated')
    job = run_job(
        ['--data', str(root), '--save-to', str(bad), '--resume'], timeout=180
    )
    assert job.returncode == 2
    assert 'is not a readable d2lpar checkpoint' in job.stdout + job.stderr
    # Both workers read the same file, so either may be the one the launcher
    # sees exit first.
    assert re.search(
        r'launch: worker [01] \(pid \d+\) exited with status 2', job.stderr
    )


# python -m d2lpar, in a process where MXNet cannot be imported.
NO_MXNET_MAIN = (
    "import sys; sys.modules['mxnet'] = None; "
    'from d2lpar.cli import main; sys.exit(main())'
)


@pytest.mark.slow
def test_a_job_runs_where_mxnet_cannot_be_imported(tmp_path):
    """A student's venv without MXNet (``pip install "d2lpar[torch]"``)
    runs the torch engine: with MXNet unimportable in the launcher and in
    every worker, two workers train an epoch. (The command line once took
    its engine table from d2lpar.multiprocess, which imports MXNet, for
    every command.)"""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=32, n_test=8)
    entry = [PY, '-c', NO_MXNET_MAIN]
    job = subprocess.run(
        entry + ['launch', '--engine', 'torch', '--workers', '2',
                 '--timeout', '150', '--'] + entry
        + ['worker', '--engine', 'torch', '--data', str(root),
           '--batch-size', '8'],
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert '[worker 1] rank 1/2 epoch 1: test acc' in job.stdout
