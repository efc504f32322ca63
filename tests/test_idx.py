"""d2lpar.idx: reading the IDX files, and an error naming the file for
every kind of corruption."""

import gzip
import os

import numpy as onp
import pytest
from conftest import (
    NAMES,
    REAL_DIR,
    idx_bytes,
    needs_real_data,
    write_fashion_dir,
    write_gz,
)
from numpy.testing import assert_array_equal

import d2lpar as dp
from d2lpar.idx import IMAGE_MAGIC, LABEL_MAGIC, read_split


def corrupt(root, split, kind, raw):
    path = root / NAMES[split][0 if kind == 'images' else 1]
    write_gz(path, raw)
    return str(path)


@pytest.mark.parametrize(
    'make_bad, message',
    [
        (
            lambda: idx_bytes(LABEL_MAGIC, onp.zeros((12, 28, 28))),
            f'magic number {LABEL_MAGIC}',
        ),
        (
            lambda: idx_bytes(IMAGE_MAGIC, onp.zeros((12, 28, 28)))[:-100],
            'truncated',
        ),
        (
            lambda: idx_bytes(IMAGE_MAGIC, onp.zeros((12, 28, 28))) + b'x',
            'header',
        ),
        (
            lambda: idx_bytes(IMAGE_MAGIC, onp.zeros((12, 32, 32))),
            'items of shape',
        ),
        (lambda: b'\x00\x00', 'too short'),
    ],
)
def test_corrupt_images_name_the_file(isolated_data, make_bad, message):
    """Wrong magic, truncated or padded data and wrong image size are a
    DatasetError whose message names the file."""
    root = isolated_data / 'bad'
    write_fashion_dir(root)
    path = corrupt(root, 'test', 'images', make_bad())
    with pytest.raises(dp.DatasetError, match=message) as info:
        dp.load_fashion_mnist(8, root=str(root))
    assert path in str(info.value)


def test_truncated_gzip(isolated_data):
    """A .gz cut short (an interrupted download) names the file."""
    root = isolated_data / 'bad'
    write_fashion_dir(root)
    path = root / NAMES['train'][0]
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(dp.DatasetError, match='not a complete gzip'):
        dp.load_fashion_mnist(8, root=str(root))


def test_label_out_of_range(isolated_data):
    """A label of 10 or more is corruption, not class 10."""
    root = isolated_data / 'bad'
    write_fashion_dir(root, n_test=12)
    labels = onp.zeros(12, onp.uint8)
    labels[3] = 11
    path = corrupt(root, 'test', 'labels', idx_bytes(LABEL_MAGIC, labels))
    with pytest.raises(
        dp.DatasetError, match='label 11 is outside 0..9'
    ) as info:
        dp.load_fashion_mnist(8, root=str(root))
    assert path in str(info.value)


def test_count_mismatch(isolated_data):
    """12 images with 11 labels come from different sets."""
    root = isolated_data / 'bad'
    write_fashion_dir(root, n_test=12)
    corrupt(root, 'test', 'labels', idx_bytes(LABEL_MAGIC, onp.zeros(11)))
    with pytest.raises(dp.DatasetError, match='12 images but .* 11 labels'):
        dp.load_fashion_mnist(8, root=str(root))


@needs_real_data
def test_real_dataset_is_complete():
    """The installed real Fashion-MNIST has 60,000 + 10,000 examples and
    6,000 + 1,000 of each of the 10 classes."""
    X, y = read_split(REAL_DIR, 'train')
    assert X.shape == (60000, 1, 28, 28)
    assert_array_equal(onp.bincount(y), [6000] * 10)
    X, y = read_split(REAL_DIR, 'test')
    assert X.shape == (10000, 1, 28, 28)
    assert_array_equal(onp.bincount(y), [1000] * 10)
    assert 0 <= X.min() and X.max() <= 1
    # The pixels over 255 in float32, bit for bit, as astype then / 255.
    raw = onp.frombuffer(
        gzip.open(os.path.join(REAL_DIR, 't10k-images-idx3-ubyte.gz')).read(),
        onp.uint8,
        offset=16,
    ).reshape(X.shape)
    expected = raw.astype(onp.float32) / 255
    assert X.dtype == onp.float32 and X.flags.c_contiguous
    assert_array_equal(X.view(onp.uint32), expected.view(onp.uint32))


def test_the_build_cache_decompresses_each_file_once(tmp_path, monkeypatch):
    """With D2LPAR_IDX_CACHE set (the book build), a file is decompressed
    once and then read from the cache, giving the same arrays; a file
    rewritten is decompressed anew; a truncated file is still an error;
    without the variable nothing is cached."""
    from d2lpar import idx

    root = tmp_path / 'fm'
    root.mkdir()
    written = write_fashion_dir(str(root), n_train=20, n_test=8)
    cache = tmp_path / 'cache'
    monkeypatch.setenv('D2LPAR_IDX_CACHE', str(cache))
    opened, gzip_open = [], gzip.open

    def counting(path, mode='rb', *args):
        if mode == 'rb':  # reads (write_gz below writes with it too)
            opened.append(os.path.basename(path))
        return gzip_open(path, mode, *args)

    monkeypatch.setattr(idx.gzip, 'open', counting)
    X1, y1 = read_split(str(root), 'train')
    X2, y2 = read_split(str(root), 'train')
    assert opened == list(NAMES['train']) and len(list(cache.iterdir())) == 2
    assert_array_equal(X1, X2)
    assert_array_equal(y1, y2)
    assert_array_equal(y1, written['train'][1])
    labels = root / NAMES['train'][1]
    write_gz(labels, idx_bytes(LABEL_MAGIC, onp.full(20, 3)))
    os.utime(labels, ns=(1, 1))  # a new time, even on a coarse clock
    _, y3 = read_split(str(root), 'train')
    assert opened[2:] == [NAMES['train'][1]] and (y3 == 3).all()
    write_gz(labels, idx_bytes(LABEL_MAGIC, onp.full(20, 3))[:-5])
    with pytest.raises(dp.DatasetError, match='truncated|bytes'):
        read_split(str(root), 'train')
    monkeypatch.delenv('D2LPAR_IDX_CACHE')
    before = sorted(cache.iterdir())
    read_split(str(root), 'test')
    assert sorted(cache.iterdir()) == before
