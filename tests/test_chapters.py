"""Every chapter, executed: no error, nothing on stderr, figures shown.

Slow: run with `pytest -m slow`. After `make book` the chapters were
just executed with the full settings, and their executed notebooks lie
in _build/jupyter_execute/: those are checked, so CI does not run the
whole book twice. A chapter without a build newer than its source runs
here in quick mode (D2LPAR_QUICK=1): the same code, less training.
"""

import os

import jupytext
import nbclient
import nbformat
import pytest
from conftest import BOOK, CHAPTERS

pytestmark = pytest.mark.slow

# Chapters whose readers must see at least one figure.
PLOTTING = {
    'splitting-the-work.md',
    'split-batch.md',
    'training.md',
    'machine-limit.md',
    'step-profile.md',
    'allreduce-algorithms.md',
    'cost-model.md',
    'measuring.md',
    'concise.md',
    'horovod.md',
    'several-hosts.md',
    'scaling.md',
    'overlap.md',
}
IMAGE_TYPES = {'image/png', 'image/svg+xml'}


EXECUTED = os.path.join(
    os.path.dirname(BOOK), '_build', 'jupyter_execute', 'book'
)


def built_outputs(name):
    """The outputs the book build left for ``name``, or None if there is
    no executed notebook newer than the chapter's source."""
    built = os.path.join(EXECUTED, name.replace('.md', '.ipynb'))
    source = os.path.join(BOOK, name)
    if not os.path.exists(built) or os.path.getmtime(built) < os.path.getmtime(
        source
    ):
        return None
    nb = nbformat.read(built, as_version=4)
    return [
        out
        for cell in nb.cells
        if cell.cell_type == 'code'
        for out in cell.get('outputs', [])
    ]


def execute(name, monkeypatch):
    monkeypatch.setenv('D2LPAR_QUICK', '1')  # inherited by the kernel
    nb = jupytext.read(os.path.join(BOOK, name))
    client = nbclient.NotebookClient(
        nb,
        timeout=900,
        kernel_name='python3',
        resources={'metadata': {'path': BOOK}},
    )
    client.execute()
    return [
        out
        for cell in nb.cells
        if cell.cell_type == 'code'
        for out in cell.get('outputs', [])
    ]


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_executes_cleanly(name, monkeypatch):
    """Every cell runs without error and nothing is written to stderr;
    plotting chapters show at least one image."""
    outputs = built_outputs(name)
    if outputs is None:
        outputs = execute(name, monkeypatch)
    stderr = [
        o.get('text', '')
        for o in outputs
        if o.get('output_type') == 'stream' and o['name'] == 'stderr'
    ]
    assert stderr == []
    images = [o for o in outputs if IMAGE_TYPES & set(o.get('data', {}))]
    if name in PLOTTING:
        assert images, (
            f'{name} produced no image: is %matplotlib inline the first line?'
        )


def test_missing_inline_backend_is_caught(tmp_path, monkeypatch):
    """The image check above can fail: a plotting cell that never shows
    its figure produces no image output."""
    source = (
        '---\nkernelspec:\n  display_name: Python 3\n'
        '  language: python\n  name: python3\n---\n\n'
        '```{code-cell} ipython3\nimport matplotlib\n'
        "matplotlib.use('Agg')\nimport d2lpar as dp\n"
        'fig = dp.plot_split(4, 2)\n```\n'
    )
    (tmp_path / 'no_inline.md').write_text(source)
    monkeypatch.setattr('test_chapters.BOOK', str(tmp_path))
    outputs = execute('no_inline.md', monkeypatch)
    assert not [o for o in outputs if IMAGE_TYPES & set(o.get('data', {}))]
