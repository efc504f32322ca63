"""Finding and loading the real Fashion-MNIST as MXNet minibatches.

Fetching the four IDX files with MXNet's download when no folder has
them, and the minibatch iterators over them. Where the files are looked
for and each epoch's seeded order are framework-neutral,
:mod:`d2lpar.fashion` (PyTorch's loader shares them); reading and
validating the files themselves is :mod:`d2lpar.idx`.
"""

import socket

from mxnet import gluon, np

from .checks import check_positive
from .fashion import (
    DEBIAN_DIR,
    SeededShuffle,
    look_for,
    missing_files,
    mxnet_cache_dir,
    not_found,
    warn_if_passed_over,
)
from .fashion import search_dirs as _search_dirs
from .idx import read_split

__all__ = [
    'DEBIAN_DIR',
    'ShuffleSampler',
    'find_fashion_mnist',
    'load_fashion_mnist',
    'mxnet_cache_dir',
    'search_dirs',
]


def search_dirs(root=None):
    """The folders searched for Fashion-MNIST, in order, with a label.

    Parameters
    ----------
    root : str, optional
        A folder given by the caller; searched first.

    Returns
    -------
    list of (str, str)
        ``(where it comes from, folder)``: ``root``, ``$D2LPAR_DATA``,
        MXNet's cache (``$MXNET_HOME/datasets/fashion-mnist``), then
        Debian's ``/usr/share/datasets/fashion-mnist``
        (:func:`d2lpar.fashion.search_dirs`, which PyTorch's loader
        searches too).
    """
    return _search_dirs(root, mxnet_cache_dir(), DEBIAN_DIR)


def _download(directory, timeout=30):
    """Try MXNet's official download; return None or the failure."""
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)  # requests would wait forever
    try:
        for train in (True, False):
            gluon.data.vision.FashionMNIST(root=directory, train=train)
    except Exception as e:  # any failure is reported, with all we tried
        return f'{type(e).__name__}: {e}'
    finally:
        socket.setdefaulttimeout(old)
    return None


def find_fashion_mnist(root=None, download=True):
    """Return the first folder that holds all four Fashion-MNIST files.

    Parameters
    ----------
    root : str, optional
        Searched first; see :func:`search_dirs` for the rest.
    download : bool, optional
        When no folder has the files, try MXNet's official download into
        MXNet's cache before giving up.

    Returns
    -------
    str
        The folder.

    Raises
    ------
    FileNotFoundError
        Naming every folder searched, what each lacked, and the two ways
        to get the data.

    Warns
    -----
    UserWarning
        When ``root`` or ``$D2LPAR_DATA`` lacks the files and a later
        folder is used instead.
    """
    directory, report = look_for(search_dirs(root))
    if directory is not None:
        return directory
    failure = 'not attempted (download=False)'
    if download:
        failure = _download(mxnet_cache_dir())
        if not missing_files(mxnet_cache_dir()):
            warn_if_passed_over(report, mxnet_cache_dir())
            return mxnet_cache_dir()
    raise not_found(report, f'Download into the MXNet cache: {failure}')


class ShuffleSampler(SeededShuffle, gluon.data.Sampler):
    """Indices ``0..n-1`` in a new random order each epoch, reproducibly.

    Gluon's own ``RandomSampler`` draws from NumPy's global generator;
    here epoch ``e``'s order depends only on ``(seed, e)``
    (:class:`d2lpar.fashion.SeededShuffle`, PyTorch's loader's order
    too), so a seed fixes every epoch's order, and a resumed run can
    start at any epoch. ``ShuffleSampler(n, seed, epoch=0)``: ``n``
    examples, the seed, and the epoch whose order the next pass uses.
    """


def load_fashion_mnist(
    batch_size,
    root=None,
    *,
    num_train=None,
    num_test=None,
    download=True,
    seed=None,
    start_epoch=0,
):
    """Load the real Fashion-MNIST as minibatch iterators.

    Taught in :doc:`/book/training`.

    Parameters
    ----------
    batch_size : int
        Examples per minibatch.
    root : str, optional
        Folder with the four IDX ``.gz`` files; see
        :func:`d2lpar.data.search_dirs` for where else it looks.
    num_train, num_test : int, optional
        Keep only the first examples of each split (quick runs, tests).
    download : bool, optional
        Try the official download if no folder has the files.
    seed : int, optional
        Seed of the training shuffle: the same seed gives the same order
        of minibatches in every epoch of every run.
    start_epoch : int, optional
        With ``seed``: the first pass uses the order of this epoch (to
        resume a run where it stopped).

    Returns
    -------
    train_iter, test_iter : mxnet.gluon.data.DataLoader
        Yield ``(X, y)``: float32 images (batch, 1, 28, 28) in [0, 1] and
        int32 labels. Training batches are reshuffled every epoch.

    Raises
    ------
    FileNotFoundError
        If no folder has the files (see
        :func:`d2lpar.data.find_fashion_mnist`).
    DatasetError
        If a file is corrupt or truncated; the message names it.
    TypeError, ValueError
        If ``batch_size``, ``num_train`` or ``num_test`` is not positive.

    Warns
    -----
    UserWarning
        When ``root`` or ``$D2LPAR_DATA`` lacks the files and another
        folder's copy is read instead (the warning names both).
    """
    check_positive('batch_size', batch_size, 'load_fashion_mnist', True)
    for name, value in (('num_train', num_train), ('num_test', num_test)):
        if value is not None:
            check_positive(name, value, 'load_fashion_mnist', True)
    directory = find_fashion_mnist(root, download)
    iters = []
    for split, limit in (('train', num_train), ('test', num_test)):
        X, y = read_split(directory, split)
        dataset = gluon.data.ArrayDataset(
            np.array(X[:limit]), np.array(y[:limit])
        )
        sampler = None
        if split == 'train' and seed is not None:
            sampler = gluon.data.BatchSampler(
                ShuffleSampler(len(dataset), seed, start_epoch),
                batch_size,
                'keep',
            )
        # num_workers=0: d2l's 4 worker processes would fight training
        # for the cores; batching in-memory arrays costs < 1 s per epoch.
        iters.append(
            gluon.data.DataLoader(
                dataset,
                batch_size=None if sampler else batch_size,
                shuffle=(split == 'train' and sampler is None),
                batch_sampler=sampler,
                num_workers=0,
            )
        )
    return tuple(iters)
