"""Make the student notebooks from the teacher's, and run the teacher's.

The assignments in ``homework/*.md`` are the teacher versions: MyST
notebooks whose solution cells carry nbgrader metadata and the markers
``### BEGIN SOLUTION`` / ``### END SOLUTION``, so a course that runs
nbgrader can take each framework's teacher notebook (below) as it is.
The student version is made by
nbgrader's own preprocessors (``ClearSolutions`` puts a stub where each
solution was, answer cells become "YOUR ANSWER HERE"; ``ClearOutput``
drops outputs), never by a hand-written regex. The book build
(``scripts/make-homework.sh``) makes only the student versions; the slow
test ``tests/test_grading_notebooks.py`` runs the teacher's.

Every assignment comes in both frameworks, from one file, the book's
convention for two frameworks (d2l's): a code cell whose first line is
``#@tab mxnet`` (tag ``tab-mxnet``) or ``#@tab pytorch`` (tag
``tab-pytorch``) belongs to that framework, a markdown cell tagged
``tab-mxnet`` or ``tab-pytorch`` likewise, and an unmarked cell is
shared. One file keeps the task text, the questions and the checks'
calls shared, so the two versions cannot drift apart; each framework's
teacher notebook, made by :func:`framework_version`, is a notebook
nbgrader takes as it is (its solution cells keep their ``grade_id``,
unique within it; the file itself holds both frameworks' cells and is
not given to nbgrader). ``NAME.ipynb`` is MXNet's, ``NAME-pytorch.ipynb``
PyTorch's (no MXNet import anywhere: it runs with
``d2lpar[torch,notebook]`` alone). By hand::

    python -m d2lpar.grading.notebooks homework _build/extra/homework \
        --teacher _build/homework-teacher --execute
"""

import argparse
import copy
import pathlib
import sys

import jupytext
import nbformat

from ..pages.install import NOTEBOOK_EXTRAS, install_note
from ..pages.tabs import FRAMEWORKS, keep_framework

# A cell's framework (its #@tab marker and tab- tag, which must agree):
# the book's rule, in one place.
from ..pages.tabs import framework_of as cell_framework  # noqa: F401
from . import detect

MARKERS = ('### BEGIN SOLUTION', '### END SOLUTION')
# The file name's suffix of each framework's notebook.
SUFFIXES = {'mxnet': '', 'pytorch': '-pytorch'}
# The module each framework's notebooks import: what running them needs.
MODULES = {'mxnet': 'mxnet', 'pytorch': 'torch'}


def framework_version(nb, framework):
    """One framework's notebook of a two-framework assignment (a copy).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A teacher notebook with both frameworks' cells.
    framework : {'mxnet', 'pytorch'}

    Returns
    -------
    nbformat.NotebookNode
        The shared cells and ``framework``'s, in order, without their
        ``#@tab`` line and ``tab-`` tag
        (:func:`d2lpar.pages.tabs.keep_framework`, which makes the
        book's chapter notebooks too).
    """
    nb = copy.deepcopy(nb)
    nb.cells = keep_framework(nb.cells, framework)
    return nb


def install_cell(framework):
    """The cell under a homework notebook's title that says how to
    install d2lpar for it: the chapters' notebooks' sentences
    (:func:`d2lpar.pages.install.install_note`) with ``framework``'s
    extras. A markdown cell: running or grading the notebook never runs
    pip."""
    text = '**Install.** To run this notebook, install d2lpar: ' + (
        install_note(extras=NOTEBOOK_EXTRAS[framework])
    )
    return nbformat.v4.new_markdown_cell(text, metadata={'tags': ['install']})


def with_install_cell(nb, framework):
    """``nb`` with :func:`install_cell` right under its title (the
    ``# `` line that opens its first cell), or first where it has none."""
    cells = nb.cells
    first = cells[0] if cells else None
    if first is None or first.cell_type != 'markdown':
        cells.insert(0, install_cell(framework))
        return nb
    title, _, rest = first.source.partition('\n')
    if not title.startswith('# '):
        cells.insert(0, install_cell(framework))
        return nb
    first.source = title
    added = [install_cell(framework)]
    if rest.strip():
        added.append(nbformat.v4.new_markdown_cell(rest.strip('\n')))
    cells[1:1] = added
    return nb


def not_run(framework):
    """Why ``framework``'s teacher notebooks cannot be executed here
    (its framework is not installed, and what installs it), or None."""
    return detect.missing(MODULES[framework])


def student_version(nb):
    """The notebook with solutions and outputs removed (a copy).

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A teacher notebook.

    Returns
    -------
    nbformat.NotebookNode

    Raises
    ------
    RuntimeError
        From nbgrader, if a solution region sits in a cell without
        nbgrader's ``solution`` metadata (it would not be graded).
    """
    # Imported here: only the build and the tests need nbgrader.
    from nbgrader.preprocessors import ClearOutput, ClearSolutions

    nb, resources = copy.deepcopy(nb), {}
    for step in (ClearSolutions(enforce_metadata=True), ClearOutput()):
        nb, resources = step.preprocess(nb, resources)
    return nb


def execute(nb, timeout=600):
    """Run every cell in a fresh kernel; raise on the first error."""
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name='python3').execute()
    return nb


def build(source, student_dir, teacher_dir=None, run=False):
    """Write the student notebooks of every ``source/*.md`` assignment:
    ``NAME.ipynb`` (MXNet) and ``NAME-pytorch.ipynb`` (PyTorch).

    Parameters
    ----------
    source : path
        Folder of the teacher versions (MyST Markdown).
    student_dir : path
        Where the student ``.ipynb`` files go (served by the book).
    teacher_dir : path, optional
        Where the teacher ``.ipynb`` files go; keep it out of the
        published folder.
    run : bool, optional
        Execute the teacher notebooks (before writing them), those of
        the frameworks installed here (:func:`not_run` says why not).

    Returns
    -------
    list of pathlib.Path
        The student notebooks written. Every notebook, teacher's and
        student's, has :func:`install_cell` under its title.
    """
    student_dir = pathlib.Path(student_dir)
    student_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for md in sorted(pathlib.Path(source).glob('[0-9]*.md')):
        both = jupytext.read(md)
        for framework in FRAMEWORKS:
            nb = framework_version(both, framework)
            nb = with_install_cell(nb, framework)
            out = student_dir / f'{md.stem}{SUFFIXES[framework]}.ipynb'
            nbformat.write(student_version(nb), out)
            written.append(out)
            if run and not not_run(framework):
                execute(nb)
            if teacher_dir:
                teacher = pathlib.Path(teacher_dir)
                teacher.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, teacher / out.name)
    return written


def main(argv=None):
    """Command line of :func:`build`; returns the exit status."""
    p = argparse.ArgumentParser(prog='python -m d2lpar.grading.notebooks')
    p.add_argument('source')
    p.add_argument('student_dir')
    p.add_argument('--teacher', default=None)
    p.add_argument(
        '--execute',
        action='store_true',
        help='run each teacher notebook whose framework is installed '
        "here (a notebook's line says when it was not)",
    )
    args = p.parse_args(argv)
    for path in build(
        args.source, args.student_dir, args.teacher, args.execute
    ):
        line = f'homework: wrote {path}'
        pytorch = path.stem.endswith(SUFFIXES['pytorch'])
        framework = 'pytorch' if pytorch else 'mxnet'
        why = args.execute and not_run(framework)
        if why:
            line += f' (its teacher version was not executed: {why})'
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
