"""The engines benchmark's arithmetic (the jobs themselves are tested in
test_multiprocess_launcher.py and test_multiprocess_horovod.py)."""

from d2lpar.bench import engines as be


def _job(sent, first, second):
    """What run_job returns for a two-epoch job."""
    epochs = [
        {
            'steps': 10,
            'seconds': 3.0,
            'test_acc': 0.3,
            'loopback_bytes': first,
        },
        {
            'steps': 10,
            'seconds': 2.0,
            'test_acc': 0.5,
            'loopback_bytes': second,
        },
    ]
    return dict(epochs[-1], bytes=sent, epochs=epochs)


def test_measure_engine_counts_the_second_epoch(monkeypatch):
    """Bytes per step are the loopback's bytes between the two epochs'
    ends over the second epoch's steps (the first epoch holds start-up);
    time per step and accuracy are the second epoch's; one job of two
    epochs is run."""
    calls = []

    def run_job(*args, **kwargs):
        calls.append((args, kwargs))
        return _job(9_000_000, 1_000_000, 5_000_000)

    monkeypatch.setattr(be, 'run_job', run_job)
    row = be.measure_engine('kvstore', workers=2, batch_size=64, steps=10)
    assert row['bytes_per_step'] == 400_000
    assert row['sec_per_step'] == 0.2
    assert row['test_acc'] == 0.5
    assert len(calls) == 1 and calls[0][1]['epochs'] == 2
    assert calls[0][0][3] == 10 * 64 * 2  # steps per epoch, global batch


def test_measure_engine_counts_nothing_without_a_namespace(monkeypatch):
    """Where the job had no network namespace of its own (bytes None), the
    worker's loopback counter saw the whole machine: no bytes per step."""
    monkeypatch.setattr(be, 'run_job', lambda *a, **k: _job(None, 1, 2))
    row = be.measure_engine('kvstore', steps=10)
    assert row['bytes_per_step'] is None
    assert row['sec_per_step'] == 0.2
