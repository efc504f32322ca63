"""What importing d2lpar changes in the process, in one place.

Two moments, so that ``from d2lpar import torch`` never needs MXNet:

**``import d2lpar``** (``d2lpar/__init__.py`` calls :func:`prepare`)
does only what costs little and imports no MXNet, so that a script or
chapter may import MXNet itself right after it:

1. **A warning on an untested Python.** d2lpar is tested on Python 3.11
   and 3.12: MXNet 1.9.1 needs numpy < 2, which has no wheels for
   Python 3.13+.
2. **``MXNET_CPU_TEMP_COPY`` is set to** :data:`CPU_TEMP_COPY` **(64)**
   unless already set (a value the user set wins). All CPU contexts
   share one pool of scratch buffers, 4 by default, handed out
   round-robin; with 4, two CPU contexts wait for each other's buffers
   and run one after the other (the :doc:`/book/training` chapter measures
   it). MXNet reads the variable when it is imported, so it is set
   first.
3. **numpy's removed type aliases are restored** where missing
   (``np.bool``, ``np.int``, ...; :mod:`d2lpar._compat`), since MXNet
   1.9.1 reads ``np.bool`` while it imports; with numpy 1.23.5 nothing
   changes.

**The first ``import mxnet`` of the process** (by ``dp.train``,
``dp.devices``, any module of MXNet's part, or the reader's own ``from
mxnet import np``) does the rest, once, through an import hook that
:func:`prepare` puts on ``sys.meta_path`` (:func:`start` runs at once if
MXNet was imported before d2lpar):

4. **MXNet is imported**; a missing or broken install fails with the
   command that fixes it, not with a bare ``No module named 'mxnet'``.
5. **``npx.set_np()``**: MXNet's NumPy interface, as in d2l, so arrays
   are ``mxnet.np.ndarray``.
6. **A fork hook** (``os.register_at_fork``): MXNet restarts its engine
   on ``fork()``, in the parent and in the child, and every CPU worker
   thread comes back with MXNet's default OpenMP threads; the hook puts
   each device's thread budget back in the parent and forgets it in the
   child (:func:`d2lpar.threads.engine_restarted_in_parent`,
   :func:`d2lpar.threads.engine_restarted_in_child`).
7. **``cpu(0)``'s worker gets every core**
   (:func:`d2lpar.threads.claim_every_core`): a worker's OpenMP threads
   may later go down but never up, since MXNet's cached oneDNN
   operators crash when run with more threads than they were built for.

The PyTorch twin (``d2lpar.torch``) and the framework-neutral modules it
shares import no MXNet, so items 4 to 7 never happen there. The
benchmarks (``dp.bench``), several processes (``dp.multiprocess``), the
grader (``dp.grading``) and matplotlib (the figures) are imported the
first time a name of theirs is used (``d2lpar.__getattr__``).
"""

import importlib.abc
import importlib.util
import os
import sys
import warnings

# Why 64 scratch buffers: see item 2 above.
CPU_TEMP_COPY = '64'


def _warn_untested_python():
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        warnings.warn(
            f'd2lpar is tested on Python 3.11 and 3.12, this is '
            f'{sys.version.split()[0]}: MXNet 1.9.1 needs numpy < 2, which '
            f'has no wheels for Python 3.13+; make a Python 3.11 or 3.12 '
            f'venv (see README)',
            stacklevel=4,
        )


def _missing_mxnet(err=None):
    cause = f' ({err})' if err else ''
    return ImportError(
        f'd2lpar needs MXNet 1.9.1, which is not installed in '
        f'{sys.prefix}{cause}; install it with: pip install '
        f'"d2lpar[cpu]" (CPU), or pip install mxnet-cu112==1.9.1 (a '
        f'CUDA build, matching your CUDA).',
        name='mxnet',
    )


def _broken_mxnet(err):
    """The ImportError naming the fix when MXNet fails while importing."""
    if isinstance(err, ImportError) and err.name == 'distutils':
        # Python 3.12 removed distutils
        return ImportError(
            'MXNet 1.9.1 imports distutils, which Python 3.12 removed; '
            'setuptools brings it back: pip install setuptools'
        )
    if isinstance(err, AttributeError):  # a numpy name MXNet uses is gone
        return ImportError(
            f'MXNet 1.9.1 failed to import beside numpy '
            f'{sys.modules["numpy"].__version__} ({err}); d2lpar is tested '
            f'with numpy 1.23.5 and 1.26.4: pip install "numpy>=1.23.5,<2"'
        )
    return _missing_mxnet(err)


class _SetUpAfterImport(importlib.abc.Loader):
    """MXNet's own loader, then :func:`start` (items 5 to 7)."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        except (ImportError, AttributeError) as err:
            raise _broken_mxnet(err) from err
        finally:  # tools that read the loader (inspect) see MXNet's own
            module.__loader__ = module.__spec__.loader = self.loader
        start()


class _MXNetFinder(importlib.abc.MetaPathFinder):
    """Item 4: the first ``import mxnet`` of the process, by d2lpar or
    anyone, runs :func:`start` right after MXNet has loaded.

    Deliberately an import hook rather than ``import mxnet`` in
    ``__init__``: the PyTorch twin must import without MXNet, and a
    chapter's ``import d2lpar as dp`` then ``from mxnet import gluon``
    must still get ``npx.set_np()`` before its first layer.
    """

    def find_spec(self, name, path=None, target=None):
        if name != 'mxnet':
            return None
        sys.meta_path.remove(self)  # once: the real search follows
        try:
            spec = importlib.util.find_spec(name)
        except ImportError as err:
            raise _missing_mxnet(err) from err
        if spec is None:
            raise _missing_mxnet()
        spec.loader = _SetUpAfterImport(spec.loader)
        return spec


def prepare():
    """Run items 1 to 3 of the module docstring and arm item 4 (from
    __init__): MXNet loaded already is set up now."""
    _warn_untested_python()
    os.environ.setdefault('MXNET_CPU_TEMP_COPY', CPU_TEMP_COPY)

    from ._compat import restore_numpy_aliases

    restore_numpy_aliases()
    if sys.modules.get('mxnet') is not None:  # imported before d2lpar
        start()
    elif not any(isinstance(f, _MXNetFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MXNetFinder())


_started = False


def start():
    """Run items 5 to 7 of the module docstring, once per process (MXNet
    is imported when this runs)."""
    global _started
    if _started:
        return
    _started = True
    import mxnet as mx

    mx.npx.set_np()

    from . import threads

    # Python runs these on os.fork(), multiprocessing's fork start and
    # subprocess with preexec_fn: the cases where MXNet's handlers run too.
    os.register_at_fork(
        after_in_parent=threads.engine_restarted_in_parent,
        after_in_child=threads.engine_restarted_in_child,
    )
    threads.claim_every_core(mx.cpu(0))
