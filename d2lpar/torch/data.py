"""Loading the real Fashion-MNIST as PyTorch minibatches.

The same four IDX files as :func:`d2lpar.load_fashion_mnist`, read and
validated by the framework-neutral :mod:`d2lpar.idx`, looked for in the
same folders; when none has them, :func:`d2lpar.fashion.download`
fetches them into MXNet's cache with the standard library (no MXNet,
d2l or torchvision needed).
"""

import torch
from torch.utils.data import DataLoader, Sampler, TensorDataset

from .. import fashion
from ..fashion import (
    DEBIAN_DIR,
    DownloadError,
    SeededShuffle,
    look_for,
    mxnet_cache_dir,
    not_found,
    warn_if_passed_over,
)
from ..fashion import search_dirs as _search_dirs
from ..idx import read_split
from .checks import check_positive

__all__ = [
    'DEBIAN_DIR',
    'ShuffleSampler',
    'find_fashion_mnist',
    'load_fashion_mnist',
    'search_dirs',
]


def search_dirs(root=None):
    """The folders searched, in order, each with where it comes from:
    ``root``, ``$D2LPAR_DATA``, MXNet's cache
    (``$MXNET_HOME``, else ``~/.mxnet``, then ``datasets/fashion-mnist``:
    where the MXNet library downloads it), then Debian's
    ``/usr/share/datasets/fashion-mnist``. The same as
    :func:`d2lpar.data.search_dirs` (:func:`d2lpar.fashion.search_dirs`)."""
    return _search_dirs(root, debian=DEBIAN_DIR)


def find_fashion_mnist(root=None, download=True):
    """Return the first folder of :func:`search_dirs` holding all four
    files.

    Parameters
    ----------
    root : str, optional
        Searched first; see :func:`search_dirs` for the rest.
    download : bool, optional
        When no folder has the files, fetch the missing ones into MXNet's
        cache (:func:`d2lpar.fashion.download`: Gluon's mirror, or
        ``$MXNET_GLUON_REPO``; SHA-1 checked) before giving up.

    Raises
    ------
    FileNotFoundError
        Naming every folder searched, what each lacked, why the download
        failed (URL and reason), and how to get the data.

    Warns
    -----
    UserWarning
        When ``root`` or ``$D2LPAR_DATA`` lacks the files and a later
        folder is used instead.
    """
    directory, report = look_for(search_dirs(root))
    if directory is not None:
        return directory
    if not download:
        raise not_found(report, 'Download: not attempted (download=False)')
    cache = mxnet_cache_dir()
    try:
        fashion.download(cache)  # returns once all four are there
    except DownloadError as e:
        raise not_found(report, f'Download into the MXNet cache: {e}') from e
    warn_if_passed_over(report, cache)
    return cache


class ShuffleSampler(SeededShuffle, Sampler):
    """Indices ``0..n-1`` in a new order each epoch, reproducibly.

    Epoch ``e``'s order depends only on ``(seed, e)``, and is the order
    :class:`d2lpar.data.ShuffleSampler` gives
    (:class:`d2lpar.fashion.SeededShuffle`): with the same seed both
    frameworks train on the same minibatches, and a resumed run can start
    at any epoch.
    """


def load_fashion_mnist(
    batch_size,
    root=None,
    *,
    num_train=None,
    num_test=None,
    seed=None,
    start_epoch=0,
    download=True,
):
    """Load the real Fashion-MNIST as PyTorch minibatch iterators.

    Taught in :doc:`/book/training`. The twin of
    :func:`d2lpar.load_fashion_mnist`: the same folders, the same files,
    and the same download target when none has them (MXNet's cache).

    Parameters
    ----------
    batch_size : int
        Examples per minibatch.
    root : str, optional
        Folder with the four IDX ``.gz`` files; see
        :func:`d2lpar.torch.data.search_dirs`.
    num_train, num_test : int, optional
        Keep only the first examples of each split.
    seed : int, optional
        Seed of the training shuffle: the same order of minibatches in
        every run, and the same as MXNet's loader with this seed. Without
        it, PyTorch's global generator shuffles.
    start_epoch : int, optional
        With ``seed``: the first pass uses this epoch's order.
    download : bool, optional
        If no folder has the files, download them (see
        :func:`d2lpar.torch.data.find_fashion_mnist`); files already
        present cause no request.

    Returns
    -------
    train_iter, test_iter : torch.utils.data.DataLoader
        Yield ``(X, y)``: float32 images (batch, 1, 28, 28) in [0, 1] and
        int64 labels. Training batches are reshuffled every epoch.

    Raises
    ------
    FileNotFoundError, d2lpar.idx.DatasetError, TypeError, ValueError
        As MXNet's loader: no folder has the files and the download
        failed (the message names each folder searched and the failed
        URL, see :func:`d2lpar.torch.data.find_fashion_mnist`), a file
        is corrupt or truncated (named), or a size is not positive.
    """
    check_positive('batch_size', batch_size, 'load_fashion_mnist', True)
    for name, value in (('num_train', num_train), ('num_test', num_test)):
        if value is not None:
            check_positive(name, value, 'load_fashion_mnist', True)
    directory = find_fashion_mnist(root, download)
    iters = []
    for split, limit in (('train', num_train), ('test', num_test)):
        X, y = read_split(directory, split)
        dataset = TensorDataset(
            torch.from_numpy(X[:limit]), torch.from_numpy(y[:limit]).long()
        )
        sampler = None
        if split == 'train' and seed is not None:
            sampler = ShuffleSampler(len(dataset), seed, start_epoch)
        # num_workers=0: worker processes would fight training for the
        # cores; batching in-memory tensors is cheap.
        iters.append(
            DataLoader(
                dataset,
                batch_size=batch_size,
                shuffle=split == 'train' and sampler is None,
                sampler=sampler,
                num_workers=0,
            )
        )
    return tuple(iters)
