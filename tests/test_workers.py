"""What every multi-process worker shares, whatever its framework
(d2lpar.workers): its shards, resuming, the end of each epoch, the
epochs themselves; on NumPy arrays, without a job or a framework."""

import io
import json
import os
import subprocess
import sys

import numpy as onp
import pytest
from numpy.testing import assert_array_equal

from d2lpar.checkpoint import CheckpointError, read_checkpoint
from d2lpar.workers import (
    Shards,
    WorkerLoop,
    load_shards,
    my_shard,
    resume_from,
)

SHAPES = [(2, 3), (3,)]


def test_shards_cover_each_minibatch_and_know_its_size():
    """Two workers' shards of every minibatch (the last one short) are
    disjoint, cover it in order, and batch_size is the whole batch's."""
    X = onp.arange(10.0)
    batches = [(X[:4], X[:4]), (X[4:7], X[4:7]), (X[7:9], X[7:9])]
    seen = {0: [], 1: []}
    for rank in (0, 1):
        shards = Shards(batches, rank, 2)
        for Xs, _ in shards:
            seen[rank].append((list(Xs), shards.batch_size))
    assert [s for s, _ in seen[0]] == [[0, 1], [4, 5], [7]]
    assert [s for s, _ in seen[1]] == [[2, 3], [6], [8]]
    assert [n for _, n in seen[0]] == [4, 3, 2]


def test_my_shard_keeps_examples_and_labels_together():
    X, y = onp.arange(7.0) * 10, onp.arange(7)
    Xs, ys = my_shard(X, y, 2, 3)  # shards of 3, 2, 2
    assert_array_equal(Xs, X[5:7])
    assert_array_equal(ys, y[5:7])


class Loop(WorkerLoop):
    """A worker whose step counts and reports loss 1 per example and
    every example correct; its test accuracy is fixed."""

    def step(self, X, y):
        self.steps += 1
        return [float(X.shape[0])], [X.shape[0]]

    def evaluate(self):
        return 0.75


def params():
    return [onp.ones(s, dtype=onp.float32) * (i + 1) for i, s in
            enumerate(SHAPES)]  # fmt: skip


def test_rank0_checkpoint_exists_when_its_epoch_line_is_printed(
    tmp_path, monkeypatch
):
    """Whoever reads rank 0's "epoch N:" line (the failures chapter kills
    a server on it) can rely on that epoch's checkpoint being on disk,
    with the epoch and the job's size."""
    path = str(tmp_path / 'run.npz')
    seen = []

    class Watch(io.StringIO):
        def write(self, text):
            if 'epoch 1:' in text:
                seen.append(os.path.exists(path))
            return super().write(text)

    loop = Loop(0, 2, params(), None, path, 'test')
    loop.steps = 3

    class Result:
        epochs_done, epoch_seconds, test_acc = 1, [0.5], [0.5]
        train_loss = [1.0]

    monkeypatch.setattr(sys, 'stdout', Watch())
    loop.end_epoch(Result())
    assert seen == [True]
    arrays, epoch = read_checkpoint(path, 2, SHAPES)
    assert epoch == 1
    for a, p in zip(arrays, params()):
        assert_array_equal(a, p)
    assert loop.stats['epochs'] == [
        {'steps': 3, 'seconds': 0.5, 'test_acc': 0.5, 'train_loss': 1.0}
    ]
    assert loop.steps == 0  # counted afresh in the next epoch


def test_only_rank0_writes_the_checkpoint(tmp_path, capsys):
    path = str(tmp_path / 'run.npz')
    loop = Loop(1, 2, params(), None, path, 'test')

    class Result:
        epochs_done, epoch_seconds, test_acc = 1, [0.5], [0.5]
        train_loss = [1.0]

    loop.end_epoch(Result())
    assert not os.path.exists(path)
    assert 'rank 1/2 epoch 1: test acc 0.500' in capsys.readouterr().out


def test_train_runs_the_remaining_epochs_and_rank0_writes_stats(
    tmp_path, capsys
):
    """Resumed after epoch 1 of 3: two epochs of this worker's shards,
    each recorded with its steps, then stats (with the total seconds)
    and the last checkpoint on disk."""
    X = onp.zeros((10, 1))
    shards = Shards([(X[:6], X[:6, 0]), (X[6:], X[6:, 0])], 0, 2)
    save, stats = str(tmp_path / 'c.npz'), str(tmp_path / 's.json')
    loop = Loop(0, 2, params(), shards, save, 'test')
    accs = loop.train(3, 1, 'cpu', 10, 0.1, stats, wait=lambda: None)
    assert accs == [0.75, 0.75]
    written = json.loads(open(stats).read())
    assert written['engine'] == 'test' and written['workers'] == 2
    assert [e['steps'] for e in written['epochs']] == [2, 2]
    assert [e['train_loss'] for e in written['epochs']] == [1.0, 1.0]
    assert written['seconds'] > 0
    assert read_checkpoint(save)[1] == 3
    out = capsys.readouterr().out
    assert 'rank 0/2 epoch 2:' in out and 'rank 0/2 epoch 3:' in out
    assert 'epoch 1:' not in out


def test_resume_from_reads_only_rank0s_file_when_asked(tmp_path):
    path = str(tmp_path / 'c.npz')
    Loop(0, 2, params(), None, path, 'test').end_epoch(
        type('R', (), dict(epochs_done=4, epoch_seconds=[1.0],
                           test_acc=[0.5], train_loss=[1.0]))
    )  # fmt: skip
    assert resume_from(0, 2, path, False, SHAPES) == (None, 0)
    assert resume_from(1, 2, path, True, SHAPES) == (None, 0)
    assert resume_from(0, 2, str(tmp_path / 'none'), True, SHAPES) == (
        None,
        0,
    )
    arrays, done = resume_from(0, 2, path, True, SHAPES)
    assert done == 4 and isinstance(arrays[0], onp.ndarray)
    with pytest.raises(CheckpointError, match='job of 2 workers, not 3'):
        resume_from(0, 3, path, True, SHAPES)


def test_load_shards_asks_for_the_global_batch_from_the_resumed_epoch(
    capsys,
):
    calls = []

    def load(batch_size, root, **kwargs):
        calls.append((batch_size, root, kwargs))
        return [(onp.arange(8), onp.arange(8))], 'test data'

    shards, test_iter = load_shards(
        load, 1, 4, 16, 2, data_dir='here', num_train=5, seed=3
    )
    assert calls == [(64, 'here', dict(start_epoch=2, num_train=5, seed=3))]
    assert test_iter == 'test data'
    assert [list(X) for X, _ in shards] == [[2, 3]]
    assert 'rank 1: resuming after epoch 2' in capsys.readouterr().out


def test_the_shared_modules_import_neither_framework():
    """What both frameworks' workers, loaders and train() share imports
    neither MXNet nor PyTorch: it works where both imports fail."""
    code = (
        "import sys; sys.modules['mxnet'] = sys.modules['torch'] = None\n"
        'import d2lpar.checkpoint, d2lpar.epochs, d2lpar.fashion\n'
        'import d2lpar.workers\n'
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['ok']
