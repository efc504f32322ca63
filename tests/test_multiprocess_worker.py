"""The multi-process worker without a job: its kvstore mode and the end of
its epochs (its checkpoints: test_multiprocess_checkpoint.py; its shards
of each minibatch, shared with the PyTorch worker: test_workers.py)."""

import pytest

from d2lpar.multiprocess.worker import kvstore_mode


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


def test_rank0s_epoch_end_checkpoints_the_mxnet_parameters(tmp_path):
    """The MXNet worker's epoch end (the shared one: its order, checkpoint
    before the line, is tested in test_workers.py) saves rank 0's MXNet
    arrays, which load back equal, with the epoch and the job's size."""
    from types import SimpleNamespace

    import d2lpar as dp
    from d2lpar.multiprocess.checkpoint import load_checkpoint
    from d2lpar.multiprocess.worker import WorkerEpochs

    path = str(tmp_path / 'run.npz')
    engine = SimpleNamespace(
        name='kvstore', rank=0, num_workers=2, asynchronous=False
    )
    params = dp.init_lenet_params(0, 0.1)
    epochs = WorkerEpochs(engine, params, 0.1, None, None, path)
    result = SimpleNamespace(
        epochs_done=1, epoch_seconds=[0.5], test_acc=[0.5], train_loss=[1.0]
    )
    epochs.end_epoch(result)
    got, epoch = load_checkpoint(path, 2, [s for _, s in dp.LENET_SHAPES])
    assert epoch == 1
    for g, p in zip(got, params):
        assert (g == p).all()
    assert 'interleaved_steps' not in epochs.stats['epochs'][0]


def test_an_async_epoch_records_its_interleaved_steps_and_bytes(capsys):
    """On dist_async the epoch's record and line add the steps
    interleaved with another worker's update (then counted afresh), the wait at the barrier and the loopback's
    bytes (None where it cannot be read)."""
    from types import SimpleNamespace

    import d2lpar as dp
    from d2lpar.multiprocess.worker import WorkerEpochs

    engine = SimpleNamespace(
        name='kvstore', rank=1, num_workers=2, asynchronous=True
    )
    epochs = WorkerEpochs(
        engine, dp.init_lenet_params(0, 0.1), 0.1, None, None, None
    )
    epochs.steps, epochs.interleaved, epochs.waited = 5, 2.0, 0.25
    result = SimpleNamespace(
        epochs_done=3, epoch_seconds=[0.5], test_acc=[0.5], train_loss=[1.0]
    )
    epochs.end_epoch(result)
    record = epochs.stats['epochs'][0]
    assert record['interleaved_steps'] == 2 and record['wait_seconds'] == 0.25
    assert 'loopback_bytes' in record
    assert epochs.stats['asynchronous'] is True
    line = capsys.readouterr().out
    assert 'rank 1/2 epoch 3: test acc 0.500' in line
    assert '2/5 steps interleaved' in line
    assert epochs.interleaved == 0 and epochs.steps == 0


def test_every_worker_starts_the_clock_after_loading_at_a_barrier(
    monkeypatch,
):
    """The worker meets the others at a barrier after loading its shards
    and before its epochs start their clock, so no worker's first steps
    count another worker's start-up (before, rank 0's first epoch took
    0.7 s where rank 1's took 0.3 s)."""
    from types import SimpleNamespace

    from d2lpar.multiprocess import worker as w

    calls = []
    engine = SimpleNamespace(
        name='kvstore', rank=0, num_workers=2, asynchronous=False,
        barrier=lambda: calls.append('barrier'),
    )  # fmt: skip
    monkeypatch.setattr(w, 'make_engine', lambda *a: engine)
    monkeypatch.setattr(w, 'share_cores', lambda n: 1)
    monkeypatch.setattr(w, 'start_state', lambda *a: ([], 0))

    def load_shards(*a, **k):
        calls.append('load')
        return [], None

    def train(self, *a, **k):
        calls.append('train')
        return []

    monkeypatch.setattr(w, 'load_shards', load_shards)
    monkeypatch.setattr(w.WorkerEpochs, 'train', train)
    w.run_worker(epochs=1)
    assert calls == ['load', 'barrier', 'train']
