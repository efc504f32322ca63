"""The multi-process worker without a job: its kvstore mode and its
shards of each minibatch (its checkpoints: test_multiprocess_checkpoint.py)."""

import numpy as onp
import pytest

from d2lpar.multiprocess.worker import Shards, kvstore_mode


def test_worker_kvstore_contradicting_the_launcher_is_refused(monkeypatch):
    """A worker asked for dist_async inside a dist_sync job would disagree
    with its peers; the error names both modes and says where to set it."""
    monkeypatch.setenv('D2LPAR_KVSTORE', 'dist_sync')
    with pytest.raises(
        ValueError, match='--kvstore dist_async .* a dist_sync job'
    ):
        kvstore_mode('dist_async')


@pytest.mark.parametrize(
    'given, launched, mode',
    [
        (None, None, 'dist_sync'),
        (None, 'dist_async', 'dist_async'),
        ('dist_async', None, 'dist_async'),
        ('dist_async', 'dist_async', 'dist_async'),
    ],
)
def test_kvstore_mode_comes_from_the_flag_or_the_launcher(
    monkeypatch, given, launched, mode
):
    """The worker's own --kvstore, else the launcher's, else dist_sync."""
    if launched:
        monkeypatch.setenv('D2LPAR_KVSTORE', launched)
    else:
        monkeypatch.delenv('D2LPAR_KVSTORE', raising=False)
    assert kvstore_mode(given) == mode


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


def test_rank0_checkpoint_exists_when_its_epoch_line_is_printed(
    tmp_path, monkeypatch
):
    """Whoever reads rank 0's "epoch N:" line (the failures chapter kills
    a server on it) can rely on that epoch's checkpoint being on disk."""
    import io
    import os
    import sys
    from types import SimpleNamespace

    import d2lpar as dp
    from d2lpar.multiprocess.worker import WorkerEpochs

    path = str(tmp_path / 'run.npz')
    seen = []

    class Watch(io.StringIO):
        def write(self, text):
            if 'epoch 1:' in text:
                seen.append(os.path.exists(path))
            return super().write(text)

    engine = SimpleNamespace(
        name='kvstore', rank=0, num_workers=2, asynchronous=False
    )
    params = dp.init_lenet_params(0, 0.1)
    epochs = WorkerEpochs(engine, params, 0.1, None, None, path)
    result = SimpleNamespace(
        epochs_done=1, epoch_seconds=[0.5], test_acc=[0.5], train_loss=[1.0]
    )
    monkeypatch.setattr(sys, 'stdout', Watch())
    epochs.end_epoch(result)
    assert seen == [True]
