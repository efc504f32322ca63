"""d2lpar.data: where it looks for Fashion-MNIST, loading, bad sizes."""

import os

import numpy as onp
import pytest
from conftest import NAMES, write_fashion_dir
from numpy.testing import assert_allclose, assert_array_equal

import d2lpar as dp


def collect(data_iter):
    Xs, ys = zip(*[(X.asnumpy(), y.asnumpy()) for X, y in data_iter])
    return onp.concatenate(Xs), onp.concatenate(ys)


def test_reads_what_was_written(isolated_data):
    """Images come back as float32 (n, 1, 28, 28) = bytes / 255, labels
    as int32, test set in order, train set complete (shuffled)."""
    root = isolated_data / 'mine'
    written = write_fashion_dir(root, n_train=24, n_test=12)
    train_iter, test_iter = dp.load_fashion_mnist(5, root=str(root))
    X, y = collect(test_iter)
    images, labels = written['test']
    assert X.dtype == onp.float32 and X.shape == (12, 1, 28, 28)
    assert_allclose(X[:, 0], images / 255, rtol=1e-6)
    assert y.dtype == onp.int32
    assert_array_equal(y, labels)
    X, y = collect(train_iter)
    assert sorted(map(bytes, (X * 255).round().astype('uint8'))) == sorted(
        map(bytes, written['train'][0][:, None])
    )


def test_num_train_and_num_test(isolated_data):
    """num_train/num_test keep the first examples only."""
    root = isolated_data / 'mine'
    write_fashion_dir(root, n_train=24, n_test=12)
    train_iter, test_iter = dp.load_fashion_mnist(
        4, root=str(root), num_train=10, num_test=6
    )
    assert len(collect(train_iter)[1]) == 10
    assert len(collect(test_iter)[1]) == 6


def test_seeded_shuffle_is_reproducible(isolated_data):
    """With a seed, every epoch is a permutation of all examples, the
    same seed repeats the order, epochs and seeds differ."""
    root = str(isolated_data / 'mine')
    write_fashion_dir(root, n_train=40, n_test=4)

    def epochs(seed):
        train_iter, _ = dp.load_fashion_mnist(8, root=root, seed=seed)
        return [
            collect(train_iter)[0][:, 0, 0, :4].tobytes() for _ in range(2)
        ], collect(train_iter)[1]

    (first, second), labels = epochs(0)
    again, _ = epochs(0)
    assert [first, second] == again and first != second
    assert epochs(1)[0][0] != first
    assert sorted(labels) == sorted(
        collect(dp.load_fashion_mnist(8, root=root)[0])[1]
    )


def test_search_order(isolated_data, monkeypatch):
    """root wins over $D2LPAR_DATA, which wins over MXNet's cache, which
    wins over Debian's folder."""
    import d2lpar.data as data

    places = {}
    for name, n in (('root', 5), ('env', 6), ('cache', 7), ('debian', 8)):
        places[name] = str(isolated_data / name)
        write_fashion_dir(places[name], n_train=n, n_test=n)
    monkeypatch.setattr(data, 'DEBIAN_DIR', places['debian'])
    monkeypatch.setattr(data, 'mxnet_cache_dir', lambda: places['cache'])
    monkeypatch.setenv('D2LPAR_DATA', places['env'])
    assert data.find_fashion_mnist(places['root']) == places['root']
    assert data.find_fashion_mnist() == places['env']
    monkeypatch.delenv('D2LPAR_DATA')
    assert data.find_fashion_mnist() == places['cache']
    monkeypatch.setattr(data, 'mxnet_cache_dir', lambda: '/nonexistent')
    assert data.find_fashion_mnist() == places['debian']


def test_chosen_folder_without_data_warns(isolated_data, monkeypatch):
    """A root or $D2LPAR_DATA that lacks the files (a typo, most likely)
    still falls through to the next folder, as the search order says, but
    with a warning naming the chosen folder and the one read instead; a
    fallback the caller did not choose is silent."""
    import warnings

    import d2lpar.data as data

    cache = str(isolated_data / 'cache')
    write_fashion_dir(cache)
    monkeypatch.setattr(data, 'mxnet_cache_dir', lambda: cache)
    typo = str(isolated_data / 'typo')
    with pytest.warns(UserWarning) as record:
        assert data.find_fashion_mnist(typo) == cache
    message = str(record[0].message)
    assert typo in message and 'root argument' in message
    assert f'reading {cache} instead' in message
    monkeypatch.setenv('D2LPAR_DATA', typo)
    with pytest.warns(UserWarning, match='D2LPAR_DATA'):
        dp.load_fashion_mnist(8)
    monkeypatch.delenv('D2LPAR_DATA')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert data.find_fashion_mnist() == cache


def test_missing_everywhere_names_every_place(isolated_data):
    """With no files anywhere the error lists each folder searched, the
    download failure, and both ways to get the data."""
    root = str(isolated_data / 'empty')
    with pytest.raises(FileNotFoundError) as info:
        dp.load_fashion_mnist(8, root=root)
    message = str(info.value)
    for place in (root, 'mxnet-home', 'debian'):
        assert place in message
    assert 'no network in tests' in message
    assert 'apt-get install -y dataset-fashion-mnist' in message
    assert 'D2LPAR_DATA' in message


def test_download_lands_in_cache(isolated_data, monkeypatch):
    """When the (faked) official download succeeds, the cache is used."""
    import d2lpar.data as data

    def fake_download(directory):
        write_fashion_dir(directory, n_train=9, n_test=3)

    monkeypatch.setattr(data, '_download', fake_download)
    train_iter, _ = dp.load_fashion_mnist(4)
    assert len(collect(train_iter)[1]) == 9


def test_partial_folder_is_reported(isolated_data):
    """A folder with only some files is skipped and the gap named."""
    root = isolated_data / 'partial'
    write_fashion_dir(root)
    os.remove(root / NAMES['test'][1])
    with pytest.raises(FileNotFoundError, match='missing t10k-labels'):
        dp.load_fashion_mnist(8, root=str(root), download=False)


@pytest.mark.parametrize(
    'kwargs, error',
    [
        (dict(batch_size=0), ValueError),
        (dict(batch_size=2.5), TypeError),
        (dict(batch_size=8, num_train=0), ValueError),
    ],
)
def test_bad_sizes(isolated_data, kwargs, error):
    """Non-positive or non-integer sizes are refused."""
    with pytest.raises(error, match='load_fashion_mnist'):
        dp.load_fashion_mnist(**kwargs)


@pytest.mark.parametrize('home', [None, 'elsewhere'])
def test_the_cache_is_where_mxnet_downloads(monkeypatch, tmp_path, home):
    """d2lpar.fashion finds MXNet's cache without MXNet (PyTorch's loader
    searches it too): the folder MXNet's own data_dir() gives, with
    $MXNET_HOME set or not."""
    import mxnet as mx

    from d2lpar.fashion import mxnet_cache_dir

    if home:
        monkeypatch.setenv('MXNET_HOME', str(tmp_path / home))
    else:
        monkeypatch.delenv('MXNET_HOME', raising=False)
    want = os.path.join(mx.base.data_dir(), 'datasets', 'fashion-mnist')
    assert mxnet_cache_dir() == want


def test_both_frameworks_search_the_same_folders(isolated_data):
    """PyTorch's loader looks where MXNet's does, in the same order."""
    pytest.importorskip('torch')
    import d2lpar.data as data
    import d2lpar.torch.data as tdata

    root = str(isolated_data / 'mine')
    mine, theirs = tdata.search_dirs(root), data.search_dirs(root)
    # the fixture moved MXNet's Debian folder: all the others agree
    assert mine[:-1] == theirs[:-1] and len(mine) == len(theirs) == 3
    assert mine[-1] == (theirs[-1][0], tdata.DEBIAN_DIR)
