"""The checkpoint file both frameworks' workers share (d2lpar.checkpoint),
on NumPy arrays: what it holds, and that either framework's arrays go in.
Its refusals: test_multiprocess_checkpoint.py (MXNet) and
test_torch_worker.py (PyTorch), through each framework's loader."""

import json

import numpy as onp
import pytest
from numpy.testing import assert_array_equal

from d2lpar.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    read_checkpoint,
    save_checkpoint,
    to_numpy,
)


def test_numpy_arrays_round_trip_with_the_record(tmp_path):
    """read_checkpoint gives back NumPy arrays equal to those saved, the
    epoch, and the file's record names the format, workers and shapes."""
    path = str(tmp_path / 'c.npz')
    arrays = [onp.arange(6, dtype=onp.float32).reshape(2, 3), onp.ones(4)]
    save_checkpoint(arrays, path, 7, 3)
    got, epoch = read_checkpoint(path, 3, [(2, 3), (4,)])
    assert epoch == 7
    for g, a in zip(got, arrays):
        assert isinstance(g, onp.ndarray) and g.dtype == a.dtype
        assert_array_equal(g, a)
    with onp.load(path) as saved:
        meta = json.loads(str(saved['meta']))
    assert meta == {
        'format': CHECKPOINT_FORMAT,
        'epoch': 7,
        'num_workers': 3,
        'shapes': [[2, 3], [4]],
    }


def test_a_crash_while_writing_leaves_the_previous_checkpoint(
    tmp_path, monkeypatch
):
    """The file is written beside and renamed: a write that dies half
    way (here numpy's writer, after some bytes) leaves the last good
    checkpoint as it was."""
    import d2lpar.checkpoint as checkpoint

    path = str(tmp_path / 'c.npz')
    save_checkpoint([onp.zeros(2)], path, 1, 1)

    def dies(f, **arrays):
        f.write(b'PK half a zip')
        raise OSError('disk full')

    monkeypatch.setattr(checkpoint.onp, 'savez', dies)
    with pytest.raises(OSError, match='disk full'):
        save_checkpoint([onp.ones(2)], path, 2, 1)
    monkeypatch.undo()
    arrays, epoch = read_checkpoint(path)
    assert epoch == 1
    assert_array_equal(arrays[0], onp.zeros(2))


def test_to_numpy_takes_each_frameworks_arrays():
    """An MXNet array (asnumpy) and a PyTorch tensor that requires grad
    (detached) become NumPy copies; a NumPy array stays one."""
    a = onp.arange(3.0)
    assert to_numpy(a) is a
    mx = pytest.importorskip('mxnet')
    assert_array_equal(to_numpy(mx.np.array(a)), a)
    torch = pytest.importorskip('torch')
    t = torch.tensor(a, requires_grad=True)
    assert_array_equal(to_numpy(t), a)


def test_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / 'c.npz'
    path.write_bytes(b'not a checkpoint')
    with pytest.raises(CheckpointError, match='not a readable d2lpar'):
        read_checkpoint(str(path))


def test_the_file_and_the_rename_reach_the_disk(tmp_path, monkeypatch):
    """Before the rename the temporary file's bytes are synced, and after
    it the folder (the rename itself), so a machine crash cannot leave an
    empty or missing checkpoint either."""
    import os

    synced = []
    real_fsync = os.fsync

    def spy(fd):
        synced.append(os.path.realpath(f'/proc/self/fd/{fd}'))
        real_fsync(fd)

    monkeypatch.setattr(os, 'fsync', spy)
    path = tmp_path / 'ckpt.npz'
    save_checkpoint([onp.ones(3, dtype='float32')], str(path), 1, 2)
    assert len(synced) == 2
    assert synced[0].startswith(str(path) + '.tmp-')  # the bytes, first
    assert synced[1] == str(tmp_path)  # then the folder's entry
