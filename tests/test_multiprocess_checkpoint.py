"""Checkpoints pair, and a corrupt or foreign one is a clear error
naming the file and what to do."""

import numpy as onp
import pytest
from numpy.testing import assert_array_equal

import d2lpar as dp
from d2lpar.multiprocess.checkpoint import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)

SHAPES = [s for _, s in dp.LENET_SHAPES]


def saved(tmp_path, workers=2, epoch=3):
    path = str(tmp_path / 'ckpt.npz')
    params = dp.init_lenet_params(1, 0.1)
    save_checkpoint(params, path, epoch, workers)
    return path, params


def test_save_then_load_gives_the_same_arrays_and_epoch(tmp_path):
    path, params = saved(tmp_path)
    got, epoch = load_checkpoint(path, 2, SHAPES)
    assert epoch == 3 and len(got) == len(params)
    for g, p in zip(got, params):
        assert_array_equal(g.asnumpy(), p.asnumpy())


def test_the_count_of_arrays_comes_from_the_model(tmp_path):
    """Any list of arrays round-trips, not only LeNet's eight."""
    path = str(tmp_path / 'small.npz')
    save_checkpoint([dp.init_lenet_params()[1]], path, 1, 1)
    got, _ = load_checkpoint(path)
    assert [g.shape for g in got] == [SHAPES[1]]


def test_other_number_of_workers_is_refused(tmp_path):
    path, _ = saved(tmp_path, workers=4)
    with pytest.raises(
        CheckpointError,
        match=f'{path} was written by a job of 4 workers, not 2.*--workers 4',
    ):
        load_checkpoint(path, 2, SHAPES)


def test_other_model_is_refused(tmp_path):
    path, _ = saved(tmp_path)
    with pytest.raises(CheckpointError, match=f'{path} holds a model'):
        load_checkpoint(path, 2, SHAPES[:-1] + [(10, 10)])


@pytest.mark.parametrize(
    'damage', ['truncated', 'pickle', 'old format', 'empty']
)
def test_unreadable_checkpoint_names_the_file(tmp_path, damage):
    """Truncated, pickled, foreign (the old arr_0... layout) or empty
    files: the error names the file and says to delete it or drop
    --resume, instead of numpy's own message."""
    path, params = saved(tmp_path)
    if damage == 'truncated':
        with open(path, 'rb') as f:
            data = f.read()
        with open(path, 'wb') as f:
            f.write(data[: len(data) // 2])
    elif damage == 'pickle':
        with open(path, 'wb') as f:
            onp.save(f, onp.array([{'a': 1}], dtype=object))
    elif damage == 'old format':
        with open(path, 'wb') as f:
            onp.savez(f, *[p.asnumpy() for p in params], epoch=1)
    else:
        open(path, 'wb').close()
    with pytest.raises(
        CheckpointError,
        match=f'{path} is not a readable d2lpar checkpoint.*'
        f'Delete it.*drop --resume',
    ):
        load_checkpoint(path, 2, SHAPES)
