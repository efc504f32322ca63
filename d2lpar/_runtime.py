"""Everything that happens when ``import d2lpar`` runs, in one place.

``d2lpar/__init__.py`` imports this module before anything else; no
other module of the package changes anything at import time. In order:

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
4. **MXNet is imported**, so that a missing or broken install fails
   here with the command that fixes it, not deep inside a chapter.
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

Nothing else is loaded up front: the benchmarks (``dp.bench``), several
processes (``dp.multiprocess``), the grader (``dp.grading``) and
matplotlib (the figures) are imported the first time a name of theirs is
used (``d2lpar.__getattr__``), which keeps ``import d2lpar`` close to
``import mxnet`` itself.
"""

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


def _import_mxnet():
    """Import MXNet; on failure, raise an ImportError naming the fix."""
    try:
        import mxnet
    except ImportError as err:
        if err.name == 'distutils':  # Python 3.12 removed it
            raise ImportError(
                'MXNet 1.9.1 imports distutils, which Python 3.12 removed; '
                'setuptools brings it back: pip install setuptools'
            ) from err
        raise ImportError(
            f'd2lpar needs MXNet 1.9.1, which is not installed in '
            f'{sys.prefix} ({err}); install it with: pip install '
            f'"d2lpar[cpu]" (CPU), or pip install mxnet-cu112==1.9.1 (a '
            f'CUDA build, matching your CUDA).'
        ) from err
    except AttributeError as err:  # a numpy name MXNet uses is gone
        raise ImportError(
            f'MXNet 1.9.1 failed to import beside numpy '
            f'{sys.modules["numpy"].__version__} ({err}); d2lpar is tested '
            f'with numpy 1.23.5 and 1.26.4: pip install "numpy>=1.23.5,<2"'
        ) from err
    return mxnet


def start():
    """Run items 1 to 7 of the module docstring (once, from __init__)."""
    _warn_untested_python()
    os.environ.setdefault('MXNET_CPU_TEMP_COPY', CPU_TEMP_COPY)

    from ._compat import restore_numpy_aliases

    restore_numpy_aliases()
    mx = _import_mxnet()
    mx.npx.set_np()

    from . import threads

    # Python runs these on os.fork(), multiprocessing's fork start and
    # subprocess with preexec_fn: the cases where MXNet's handlers run too.
    os.register_at_fork(
        after_in_parent=threads.engine_restarted_in_parent,
        after_in_child=threads.engine_restarted_in_child,
    )
    threads.claim_every_core(mx.cpu(0))
