"""The chapter notebooks served with the book run in plain Jupyter.

Each chapter becomes a notebook (scripts/chapter_notebook.py, the code
scripts/build-book.sh uses for the downloads); the fast tests check that
no Sphinx-only syntax is left in it. The ``notebooks`` tests execute the
notebooks top to bottom with nbclient in a student's environment, a venv
with only ``pip install ".[cpu,notebook]"`` (no jupyter-book, no clone on
the path), in quick mode: ``make test-notebooks`` creates the venv and
runs them (all chapters; D2LPAR_NOTEBOOKS=a,b picks some). Without that
venv they are skipped, saying so.
"""

import os
import pathlib
import subprocess
import sys
import time

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'scripts'))
import chapter_notebook  # noqa: E402

CHAPTERS = sorted(
    p.stem
    for p in (ROOT / 'book').glob('*.md')
    if '\nkernelspec:' in p.read_text()
)
SPHINX_ONLY = (
    '{literalinclude}',
    '{glue',
    '{admonition}',
    '{doc}',
    '{eval-rst}',
    ':class: dropdown',
)

RUN = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=900, kernel_name='python3',
               resources={'metadata': {'path': sys.argv[2]}}).execute()
nbformat.write(nb, sys.argv[1])
"""


def wanted(chapter):
    """D2LPAR_NOTEBOOKS=training,concise runs only those (default all)."""
    names = os.environ.get('D2LPAR_NOTEBOOKS', '')
    if names and chapter not in names.split(','):
        pytest.skip(f'{chapter} not in D2LPAR_NOTEBOOKS={names}')


def plain_venv():
    """The student's venv, or a skip saying how to make it."""
    given = os.environ.get('D2LPAR_PLAIN_VENV')
    venv = pathlib.Path(given or ROOT / '.venv-plain').resolve()
    if not (venv / 'bin' / 'python').exists():
        if given:  # asked for explicitly (make test-notebooks): a failure
            pytest.fail(
                f'D2LPAR_PLAIN_VENV={given} has no bin/python; '
                f'run scripts/setup-venv.sh --plain {given}'
            )
        pytest.skip(
            f'no plain venv at {venv}; make test-notebooks '
            f'creates it (pip install ".[cpu,notebook]")'
        )
    return venv


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_has_no_sphinx_only_syntax(chapter):
    """The notebook keeps every code cell of the chapter, shows the
    source of each literalinclude as a code cell, and has no directive
    or role a plain Jupyter would show as raw text."""
    md = (ROOT / 'book' / f'{chapter}.md').read_text()
    nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
    markdown = '\n'.join(
        c.source for c in nb.cells if c.cell_type == 'markdown'
    )
    for syntax in SPHINX_ONLY:
        assert syntax not in markdown, syntax
    sources = [c for c in nb.cells if 'source' in c.metadata.get('tags', [])]
    assert len(sources) == md.count('{literalinclude}')
    code = [c for c in nb.cells if c.cell_type == 'code']
    assert len(code) == md.count('```{code-cell}') + len(sources)


@pytest.mark.notebooks
@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_runs_in_plain_jupyter(chapter, tmp_path):
    """The chapter's notebook runs top to bottom (D2LPAR_QUICK=1) in the
    plain venv with its own d2lpar, and every source cell displays the
    code of the function it names."""
    wanted(chapter)
    venv = plain_venv()
    path = tmp_path / f'{chapter}.ipynb'
    chapter_notebook.main(str(ROOT / 'book' / f'{chapter}.md'), str(path))
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ('PYTHONPATH', 'MPLBACKEND', 'VIRTUAL_ENV')
    }
    env.update(
        D2LPAR_QUICK='1',
        PATH=f'{venv / "bin"}{os.pathsep}{env.get("PATH", "")}',
    )
    start = time.monotonic()
    done = subprocess.run(
        [str(venv / 'bin' / 'python'), '-c', RUN, str(path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    print(f'{chapter}: {time.monotonic() - start:.0f} s')
    assert done.returncode == 0, done.stderr[-4000:]
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if 'source' in cell.metadata.get('tags', []):
            shown = str(cell.outputs)
            name = cell.source.splitlines()[0].split('.')[-1].rstrip(')')
            assert f'def {name}' in shown or f'class {name}' in shown, name
