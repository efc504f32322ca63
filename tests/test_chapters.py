"""Execute every chapter as a notebook (slow: run with `pytest -m slow`).

Chapters run in quick mode (D2LPAR_QUICK=1): the same code, less
training. A chapter fails here if any cell raises, writes to stderr, or
(for a chapter that plots) shows no image.
"""
import os

import jupytext
import nbclient
import pytest

from test_book_sources import BOOK, CHAPTERS

pytestmark = pytest.mark.slow

# Chapters whose readers must see at least one figure.
PLOTTING = {'splitting-the-work.md', 'split-batch.md', 'training.md',
            'allreduce-algorithms.md', 'cost-model.md', 'measuring.md',
            'concise.md', 'horovod.md', 'several-hosts.md'}
IMAGE_TYPES = {'image/png', 'image/svg+xml'}


def execute(name, monkeypatch):
    monkeypatch.setenv('D2LPAR_QUICK', '1')  # inherited by the kernel
    nb = jupytext.read(os.path.join(BOOK, name))
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name='python3',
        resources={'metadata': {'path': BOOK}})
    client.execute()
    return [out for cell in nb.cells if cell.cell_type == 'code'
            for out in cell.get('outputs', [])]


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_executes_cleanly(name, monkeypatch):
    """Every cell runs without error and nothing is written to stderr;
    plotting chapters show at least one image."""
    outputs = execute(name, monkeypatch)
    stderr = [o.get('text', '') for o in outputs
              if o.get('output_type') == 'stream' and o['name'] == 'stderr']
    assert stderr == []
    images = [o for o in outputs if IMAGE_TYPES & set(o.get('data', {}))]
    if name in PLOTTING:
        assert images, f'{name} produced no image: is %matplotlib inline ' \
                       f'the first line?'


def test_missing_inline_backend_is_caught(tmp_path, monkeypatch):
    """The image check above can fail: a plotting cell that never shows
    its figure produces no image output."""
    source = ('---\nkernelspec:\n  display_name: Python 3\n'
              '  language: python\n  name: python3\n---\n\n'
              '```{code-cell} ipython3\nimport matplotlib\n'
              "matplotlib.use('Agg')\nimport d2lpar as dp\n"
              'fig = dp.plot_split(4, 2)\n```\n')
    (tmp_path / 'no_inline.md').write_text(source)
    monkeypatch.setattr('test_chapters.BOOK', str(tmp_path))
    outputs = execute('no_inline.md', monkeypatch)
    assert not [o for o in outputs if IMAGE_TYPES & set(o.get('data', {}))]
