"""The book's own helpers: build settings, glued text, shown source, figures.

What a chapter needs beside the library it teaches, reached as
``dp.pages.NAME`` (the first part's :func:`~d2lpar.pages.book_settings`,
:func:`~d2lpar.pages.glue_text`, :func:`~d2lpar.pages.show_source`,
:func:`~d2lpar.pages.plot_split`, ... also as ``dp.NAME``):

- :mod:`d2lpar.pages.book`: full or quick build (``D2LPAR_QUICK``),
  gluing text into a page, a function's source without its docstring;
- :mod:`d2lpar.pages.figures`: the book's diagrams and plots
  (matplotlib, imported the first time a figure is drawn);
- :mod:`d2lpar.pages.tabs`: a page's code in MXNet and PyTorch
  (``#@tab pytorch`` cells run in their own namespace:
  :func:`~d2lpar.pages.framework_tabs`).

Framework-neutral: nothing here imports MXNet at module level (a figure
of measured numbers takes the numbers, not the arrays), so a second
framework's pages draw with the same functions.
"""

import importlib

from .book import (
    FULL_NUM_TEST,
    FULL_NUM_TRAIN,
    QUICK_VAR,
    BookSettings,
    book_settings,
    glue_text,
    show_source,
    strip_docstrings,
)
from .tabs import cell_framework, framework_tabs

# The figures bring in matplotlib: imported on first use (PEP 562).
FIGURES = (
    'DEVICE_COLORS',
    'LINE_STYLES',
    'PLACED_APART',
    'draw_parallelism_schemes',
    'draw_ring_trace',
    'plot_accuracy',
    'plot_bandwidth',
    'plot_cost_model',
    'plot_engines',
    'plot_network',
    'plot_split',
    'plot_traffic',
)


def __getattr__(name):
    """A figure helper (and matplotlib) on its first use."""
    if name not in FIGURES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module('.figures', __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(FIGURES))


__all__ = [
    'FULL_NUM_TEST',
    'FULL_NUM_TRAIN',
    'QUICK_VAR',
    'BookSettings',
    'book_settings',
    'cell_framework',
    'framework_tabs',
    'glue_text',
    'show_source',
    'strip_docstrings',
    *FIGURES,
]
