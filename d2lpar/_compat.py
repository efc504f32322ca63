"""MXNet 1.9.1 beside numpy 1.24+: restore numpy's removed aliases.

numpy 1.20 deprecated, and 1.24 removed, the aliases of Python's own
types: ``np.bool``, ``np.int``, ``np.float``, ``np.complex``,
``np.object``, ``np.str``, ``np.long`` and ``np.unicode``. MXNet 1.9.1
still uses two of them: ``mxnet/numpy/utils.py`` runs
``bool = onp.bool`` while ``import mxnet`` runs, so MXNet fails to
import beside numpy 1.24 or newer (AttributeError), and
``mxnet.test_utils`` uses ``np.int``. numpy 1.23.5, pinned by the book's
stack, is the newest numpy that has them, and it has no wheel for
Python 3.12; numpy 1.26, the oldest with 3.12 wheels, lacks them.

:func:`restore_numpy_aliases` is the compatibility step: it sets each
alias that is *missing* to the type it named (``np.bool = bool``, ...)
and leaves every name numpy has untouched, so with numpy 1.23.5 it sets
nothing, and with numpy 2 (where ``np.bool`` and ``np.long`` came back as
numpy's own types) it does not replace them. ``d2lpar/__init__.py``
calls it before anything imports MXNet, so a script that imports MXNet
itself imports d2lpar before it::

    import d2lpar as dp  # restores what is missing (no MXNet yet)
    from mxnet import np, npx

All eight are restored, not only MXNet's two, so that code written for
the pinned stack (numpy 1.23.5, where all eight still work) behaves the
same beside numpy 1.26.
"""

import warnings

# The aliases numpy 1.24 removed, and what each one named.
ALIASES = {
    'bool': bool,
    'int': int,
    'float': float,
    'complex': complex,
    'object': object,
    'str': str,
    'long': int,
    'unicode': str,
}


def missing_aliases(module):
    """The names in :data:`ALIASES` that ``module`` lacks, in order."""
    with warnings.catch_warnings():
        # Asking warns: numpy 1.20-1.23 answers with a DeprecationWarning,
        # numpy 1.25-1.26 warns (FutureWarning: np.bool will come back as
        # numpy's own type) before it raises AttributeError. Only whether
        # the name is there counts here.
        warnings.simplefilter('ignore')
        return [name for name in ALIASES if not hasattr(module, name)]


def restore_numpy_aliases(module=None):
    """Set numpy's removed type aliases that are missing; return their names.

    Parameters
    ----------
    module : module, optional
        The numpy module to patch (default: ``numpy`` itself). The tests
        pass a stand-in.

    Returns
    -------
    list of str
        The aliases set, in the order of :data:`ALIASES`: empty where
        numpy has them all (numpy <= 1.23).
    """
    if module is None:
        import numpy as module
    names = missing_aliases(module)
    for name in names:
        setattr(module, name, ALIASES[name])
    return names
