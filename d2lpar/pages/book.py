"""Helpers for the book's pages: build settings, glued text, source.

``D2LPAR_QUICK=1`` makes every chapter train briefly on a slice of the
data so a whole build takes minutes; the pages then say so.
"""

import ast
import dataclasses
import inspect
import os
import textwrap

QUICK_VAR = 'D2LPAR_QUICK'
# The full build trains on this many images: all 60,000 would make the
# training chapter alone take longer than the whole book's budget (at
# about 0.1 s per step of 256 images on two cores; see its benchmark).
# 6,400 images are 25 steps of 256 per epoch: enough steps to time an
# epoch, and the training chapter's two 10-epoch runs take under two
# minutes (12,800 made the whole build take over 15 on 2 cores).
FULL_NUM_TRAIN = 6_400
# Test accuracy after every epoch on all 10,000 test images took a fifth
# of each training run's time; 2,560 images (10 batches of 256) give it
# to within about a percentage point (one standard error: 0.8%).
FULL_NUM_TEST = 2_560


@dataclasses.dataclass(frozen=True)
class BookSettings:
    """Training sizes a chapter should use.

    Attributes
    ----------
    quick : bool
        Built with ``D2LPAR_QUICK=1``.
    num_epochs : int
        Epochs of the main training runs.
    num_train : int
        Training examples used (the first ones of the 60,000).
    num_test : int
        Test examples used (the first ones of the 10,000).
    """

    quick: bool
    num_epochs: int
    num_train: object
    num_test: int

    def describe(self):
        """A sentence for the page saying how it was built."""
        if not self.quick:
            return (
                f'This page was built with the full settings: '
                f'{self.num_epochs} epochs on the first '
                f'{self.num_train:,} of the 60,000 training images, '
                f'tested on the first {self.num_test:,} of the 10,000 '
                f'test images, which keeps the whole book within minutes '
                f'to build (`dp.train` itself reads all of them unless '
                f'told otherwise).'
            )
        return (
            f'This page was built in quick mode ({QUICK_VAR}=1): '
            f'{self.num_epochs} epochs on the first {self.num_train:,} '
            f'training images, tested on {self.num_test:,} test images, '
            f"so its numbers are rougher than a full build's."
        )


def book_settings():
    """Read ``D2LPAR_QUICK`` and return the chapter's training sizes.

    Returns
    -------
    BookSettings
        10 epochs on 6,400 images (``FULL_NUM_TRAIN``) tested on 2,560
        (``FULL_NUM_TEST``), or 2 epochs on 6,000 tested on 1,000 when
        ``D2LPAR_QUICK`` is set to anything but ``''`` or ``'0'``.
    """
    quick = os.environ.get(QUICK_VAR, '') not in ('', '0')
    if quick:
        return BookSettings(True, 2, 6000, 1000)
    return BookSettings(False, 10, FULL_NUM_TRAIN, FULL_NUM_TEST)


# The MIME prefix under which myst-nb stores a value glued without being
# shown (myst_nb.ext.glue.GLUE_PREFIX, the papermill/scrapbook format).
GLUE_PREFIX = 'application/papermill.record/'


def glue_text(name, text):
    """Glue ``text`` so the prose can show it with ``{glue:md}`name```.

    Taught in every chapter: every number in the book's prose is computed
    when the page is built and inserted this way, never typed. Gluing a
    Markdown object (not a plain ``str``) keeps the quotes of ``repr`` off
    the page. Without myst-nb (a chapter opened in plain Jupyter) nothing
    can be glued, so the value is printed as ``name: text`` instead, and
    the reader still sees what the prose refers to.

    Parameters
    ----------
    name : str
        The key the prose refers to.
    text : object
        Shown as Markdown after ``str()``; format numbers first.

    Returns
    -------
    str
        The text glued, for printing or checks. End a visible cell with
        ``;`` (or assign the result) so the page does not echo it.
    """
    from IPython.display import Markdown

    try:
        import myst_nb  # noqa: F401  (present: the page is being built)
    except ImportError:
        print(f'{name}: {text}')
    else:
        _glue(name, Markdown(str(text)))
    return str(text)


def _glue(name, obj):
    """What ``myst_nb.glue(name, obj, display=False)`` does, without its
    import.

    myst-nb's ``glue`` lives in ``myst_nb.ext.glue``, which imports
    nbformat, hence jsonschema, whose format checkers build an Earley
    parser of RFC 3987 when ``rfc3987-syntax`` is installed (as
    jupyter-events installs it): about 3 s of CPU in every page's kernel,
    for a function of four lines. The display message is the same
    (``tests/test_pages_book.py`` compares the two).

    Parameters
    ----------
    name : str
        The glue key.
    obj : object
        Any object IPython can display (here a ``Markdown``).
    """
    from IPython.core.formatters import format_display_data
    from IPython.display import display

    bundle, metadata = format_display_data(obj)
    metadata['scrapbook'] = {'name': name, 'mime_prefix': GLUE_PREFIX}
    display(
        {GLUE_PREFIX + k: v for k, v in bundle.items()},
        raw=True,
        metadata=metadata,
    )


def _docstring_lines(tree):
    """1-based (first, last) lines of every docstring in ``tree``."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ) and ast.get_docstring(node):
            doc = node.body[0]
            spans.append((doc.lineno, doc.end_lineno, len(node.body) == 1))
    return spans


def strip_docstrings(source):
    """Return ``source`` without the docstrings of its functions/classes.

    Comments and blank lines stay. A body that was only a docstring
    becomes ``...`` so the result is still valid Python.

    Parameters
    ----------
    source : str
        Python source of one or more definitions.

    Returns
    -------
    str
        The source with every function, method and class docstring gone.

    Examples
    --------
    >>> print(strip_docstrings('def f():\\n    "Doc."\\n    return 1'))
    def f():
        return 1
    """
    source = textwrap.dedent(source)
    lines = source.splitlines()
    for first, last, only in sorted(
        _docstring_lines(ast.parse(source)), reverse=True
    ):
        indent = lines[first - 1][
            : len(lines[first - 1]) - len(lines[first - 1].lstrip())
        ]
        while last < len(lines) and not lines[last].strip():
            last += 1  # the blank line a class docstring leaves
        lines[first - 1 : last] = [indent + '...'] if only else []
    return '\n'.join(lines)


def show_source(obj):
    """Show the source of a library object without its docstrings.

    Taught in every chapter: the page shows the code that ran, and the
    docstring is left to the API reference, so the reader sees the body.
    Works for functions, classes (their methods lose their docstrings
    too) and methods, in the book and in plain Jupyter.

    Parameters
    ----------
    obj : function, class or method
        A ``d2lpar`` object, e.g. ``dp.split_batch``.

    Returns
    -------
    IPython.display.Code
        Highlighted Python source; a notebook cell ending with it shows it.

    Raises
    ------
    TypeError
        If ``obj`` has no Python source (a builtin, a number, a module
        attribute that is not a definition).
    """
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(
            f'show_source: {obj!r} has no Python source '
            f'({e}); pass a function, class or method'
        ) from e
    from IPython.display import Code

    return Code(strip_docstrings(source), language='python')
