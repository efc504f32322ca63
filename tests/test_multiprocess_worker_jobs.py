"""The worker in real ps-lite jobs: resuming numbers its epochs on, and
dist_async learns and, with one worker, equals dist_sync (slow: each
test launches processes, under a time limit)."""

import json
import subprocess
import sys

import numpy as onp
import pytest
from conftest import write_idx_dir
from numpy.testing import assert_allclose

import d2lpar as dp
from d2lpar.multiprocess.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow
PY = sys.executable


def job(tmp_path, args, workers=2, kvstore='dist_sync', name='stats'):
    """Run a launch of the worker; return (CompletedProcess, stats)."""
    stats = tmp_path / f'{name}.json'
    run = subprocess.run(
        [
            PY,
            '-m',
            'd2lpar',
            'launch',
            '--workers',
            str(workers),
            '--kvstore',
            kvstore,
            '--timeout',
            '150',
            '--',
            PY,
            '-m',
            'd2lpar',
            'worker',
            '--stats-to',
            str(stats),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(stats) as f:
        return run, json.load(f)


def write_banded(directory, n_train, n_test, seed=0):
    """IDX files a network can learn: class c is a bright band across
    rows 2c + 2 and 2c + 3 over dim noise."""
    rng = onp.random.default_rng(seed)
    arrays = {}
    for split, n in (('train', n_train), ('test', n_test)):
        labels = rng.integers(0, 10, n, dtype=onp.uint8)
        images = rng.integers(0, 64, (n, 28, 28), dtype=onp.uint8)
        for image, label in zip(images, labels):
            image[2 + 2 * label : 4 + 2 * label, :] = 255
        arrays[split] = images, labels
    write_idx_dir(directory, arrays)


def test_resume_numbers_the_remaining_epochs_on(tmp_path):
    """1 epoch, then --resume with --epochs 3: each worker trains and
    prints epochs 2 and 3 only, and the checkpoint says 3."""
    root = tmp_path / 'data'
    write_banded(root, n_train=64, n_test=16)
    ckpt = str(tmp_path / 'ckpt.npz')
    base = ['--batch-size', '16', '--data', str(root), '--save-to', ckpt]
    job(tmp_path, base + ['--epochs', '1'])
    run, stats = job(tmp_path, base + ['--epochs', '3', '--resume'])
    for rank in (0, 1):
        assert f'rank {rank}: resuming after epoch 1' in run.stdout
        printed = [
            line.split(f'rank {rank}/2 epoch ')[1].split(':')[0]
            for line in run.stdout.splitlines()
            if f'rank {rank}/2 epoch ' in line
        ]
        assert printed == ['2', '3']
    assert len(stats['epochs']) == 2
    assert [e['steps'] for e in stats['epochs']] == [2, 2]
    assert load_checkpoint(ckpt)[1] == 3


def test_dist_async_learns(tmp_path):
    """Two asynchronous workers on learnable data end far above chance
    (0.1): the servers' updates train the model."""
    root = tmp_path / 'data'
    write_banded(root, n_train=256, n_test=64)
    args = ['--epochs', '3', '--batch-size', '16', '--data', str(root)]
    _, stats = job(tmp_path, args, kvstore='dist_async')
    assert stats['asynchronous'] is True
    assert stats['epochs'][-1]['test_acc'] > 0.5


def test_two_workers_split_the_machines_cores(tmp_path, monkeypatch):
    """Each of 2 workers on this machine trains with half its cores (at
    least 1): importing d2lpar gives cpu(0) every core, and two workers
    with every core each ran 25-70x slower per step."""
    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    root = tmp_path / 'data'
    write_banded(root, n_train=64, n_test=16)
    args = ['--epochs', '1', '--batch-size', '16', '--data', str(root)]
    _, stats = job(tmp_path, args)
    assert stats['threads'] == max(1, dp.threads.available_cores() // 2)


def test_one_async_worker_equals_one_sync_worker(tmp_path):
    """With one worker nothing can be stale: dist_async (the server
    steps) ends with dist_sync's parameters (the worker steps) to float32
    rounding (rtol 1e-5), and counts no interleaved step. The last minibatch
    is short, so the servers' divisor is corrected too."""
    root = tmp_path / 'data'
    write_banded(root, n_train=72, n_test=16)
    params = {}
    for kv in ('dist_sync', 'dist_async'):
        ckpt = str(tmp_path / f'{kv}.npz')
        args = ['--epochs', '2', '--batch-size', '16', '--data', str(root)]
        _, stats = job(tmp_path, args + ['--save-to', ckpt], 1, kv, name=kv)
        params[kv], _ = load_checkpoint(ckpt)
        assert [e['steps'] for e in stats['epochs']] == [5, 5]
    assert [e['interleaved_steps'] for e in stats['epochs']] == [0, 0]
    start = dp.init_lenet_params(0, 0.1)  # the worker's default start
    moved = onp.abs(params['dist_sync'][4].asnumpy() - start[4].asnumpy())
    assert moved.max() > 1e-4  # the runs trained: equality means more
    for s, a in zip(params['dist_sync'], params['dist_async']):
        assert_allclose(a.asnumpy(), s.asnumpy(), rtol=1e-5, atol=1e-6)
