"""The book build fails on a planted error (slow).

Builds a one-chapter book with the project's own _config.yml, first
clean (it must pass, so the failure below has no other cause), then with
a chapter whose cell raises (it must fail).
"""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter

```{{code-cell}} ipython3
%matplotlib inline
import d2lpar as dp
print(dp.shard_sizes(10, 3))
{planted}
```
"""


def build(tmp_path, planted):
    book = tmp_path / 'book'
    book.mkdir(exist_ok=True)
    shutil.copy(os.path.join(ROOT, '_config.yml'), book)
    (book / '_toc.yml').write_text('format: jb-book\nroot: chapter\n')
    (book / 'chapter.md').write_text(CHAPTER.format(planted=planted))
    # The static files _config.yml lists, as the book has them.
    for static in ('.mathjax', '_static'):
        if not (book / static).exists():
            os.symlink(os.path.join(ROOT, static), book / static)
    jb = os.path.join(os.path.dirname(sys.executable), 'jupyter-book')
    subprocess.run([jb, 'clean', str(book)], capture_output=True, timeout=120)
    (book / '_build' / 'extra').mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [jb, 'build', str(book), '--all', '-W', '--keep-going'],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_planted_error_fails_the_build(tmp_path):
    """A clean chapter builds (exit 0); the same chapter with a cell that
    raises makes the build exit non-zero, naming the error."""
    if not os.path.exists(os.path.join(ROOT, '.mathjax', 'static')):
        pytest.fail('MathJax is not installed: run scripts/get-mathjax.sh')
    good = build(tmp_path, '')
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    bad = build(tmp_path, "raise RuntimeError('planted error')")
    assert bad.returncode != 0
    assert 'planted error' in bad.stdout + bad.stderr
