"""Checks shared by the engine tests: the same worker, any launcher.

Each check takes ``run(worker_args)``, which starts the 2-worker job on
one engine and returns its ``subprocess.CompletedProcess``. MXNet is
imported only where a check uses it: the resume check serves the
PyTorch worker too (tests/test_torch_worker.py), without MXNet.
"""

import numpy as onp
from conftest import write_fashion_dir
from numpy.testing import assert_allclose

from d2lpar.checkpoint import read_checkpoint


def check_equals_one_process(run, tmp_path):
    """2 workers with 16 examples each per step, for 2 epochs, end with
    the parameters of one process taking steps of 32 on the same order
    (rtol 1e-5). Returns the job's CompletedProcess."""
    import mxnet as mx

    import d2lpar as dp
    from d2lpar.multiprocess.checkpoint import load_checkpoint

    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=96, n_test=16)
    saved = tmp_path / 'params.npz'
    job = run(
        [
            '--epochs',
            '2',
            '--batch-size',
            '16',
            '--lr',
            '0.1',
            '--data',
            str(root),
            '--save-to',
            str(saved),
        ]
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    got, epochs = load_checkpoint(str(saved))
    assert epochs == 2
    start = dp.init_lenet_params(0, 0.1)
    data = dp.load_fashion_mnist(32, str(root), seed=0)
    params = dp.get_params(start, mx.cpu(0))
    for _ in range(2):
        for X, y in data[0]:
            dp.train_batch(X, y, [params], [mx.cpu(0)], 0.1)
    assert onp.abs(params[4].asnumpy() - start[4].asnumpy()).max() > 1e-4
    for g, p in zip(got, params):
        assert_allclose(g.asnumpy(), p.asnumpy(), rtol=1e-5, atol=1e-6)
    return job


def check_resume_matches_uninterrupted(run, tmp_path):
    """Training 1 epoch, then resuming to 3 from its checkpoint, ends
    with the parameters of 3 uninterrupted epochs (rtol 1e-6)."""
    root = tmp_path / 'data'
    write_fashion_dir(root, n_train=64, n_test=16)
    full, part = tmp_path / 'full.npz', tmp_path / 'part.npz'
    base = ['--batch-size', '16', '--data', str(root)]
    for extra in (
        ['--epochs', '3', '--save-to', str(full)],
        ['--epochs', '1', '--save-to', str(part)],
        ['--epochs', '3', '--save-to', str(part), '--resume'],
    ):
        job = run(base + extra)
        assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-2000:]
    assert 'resuming after epoch 1' in job.stdout
    want, want_epoch = read_checkpoint(str(full))
    got, got_epoch = read_checkpoint(str(part))
    assert got_epoch == want_epoch == 3
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-6, atol=1e-7)
