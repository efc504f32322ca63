"""Installs d2lpar's guard in every Python process of a launched job.

The launcher puts this folder first on the job's ``PYTHONPATH``, so
Python imports this file at start-up, whatever command started it (see
:mod:`d2lpar.multiprocess.guard`). It loads the guard by path (``d2lpar`` need
not be importable) and then runs the ``sitecustomize`` it shadows.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_here = os.path.dirname(os.path.abspath(__file__))
_load(
    'd2lpar_guard', os.path.join(os.path.dirname(_here), 'guard.py')
).install_guard()
# The sitecustomize further down the path, if any (e.g. Debian's).
_rest = [p for p in sys.path if os.path.abspath(p or '.') != _here]
_spec = importlib.machinery.PathFinder.find_spec('sitecustomize', _rest)
if _spec is not None and _spec.origin:
    _load('_next_sitecustomize', _spec.origin)
