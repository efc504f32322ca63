"""The chapters' sources keep the book's promises (fast, no execution)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOK = os.path.join(ROOT, 'book')
CHAPTERS = sorted(f for f in os.listdir(BOOK) if f.endswith('.md')
                  and '\nkernelspec:' in open(os.path.join(BOOK, f)).read())
CELL = re.compile(r'^```\{code-cell\}[^\n]*\n(.*?)^```', re.S | re.M)


def code_cells(name):
    return CELL.findall(open(os.path.join(BOOK, name)).read())


def prose(name):
    return CELL.sub('', open(os.path.join(BOOK, name)).read())


def test_every_toc_file_exists():
    """Each chapter in _toc.yml exists, and every notebook chapter is in
    the table of contents."""
    toc = open(os.path.join(ROOT, '_toc.yml')).read()
    listed = re.findall(r'(?:root|file): (book/[\w-]+)', toc)
    for entry in listed:
        assert os.path.exists(os.path.join(ROOT, entry + '.md')), entry
    assert {f'book/{c[:-3]}' for c in CHAPTERS} <= set(listed)


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_starts_with_matplotlib_inline(name):
    """Plots vanish in this stack unless the first code cell enables the
    inline backend."""
    assert '%matplotlib inline' in code_cells(name)[0].splitlines()[:3]


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_imports_d2lpar_and_defines_nothing(name):
    """Every chapter imports d2lpar as dp, never with a star, and no
    code cell defines a function or class of its own."""
    cells = code_cells(name)
    assert any('import d2lpar as dp' in c for c in cells)
    for cell in cells:
        assert 'import *' not in cell
        assert not re.search(r'^(def|class) ', cell, re.M), cell[:80]


@pytest.mark.parametrize('name', CHAPTERS)
def test_literalincludes_name_real_objects(name):
    """Each literalinclude :pyobject: exists in the file it points at, so
    the page shows real library source."""
    text = open(os.path.join(BOOK, name)).read()
    for path, obj in re.findall(
            r'```\{literalinclude\} (\S+)\n:pyobject: (\S+)', text):
        source = open(os.path.normpath(os.path.join(BOOK, path))).read()
        outer, _, method = obj.partition('.')  # Class.method is allowed
        match = re.search(rf'^(def|class) {outer}\b', source, re.M)
        assert match, f'{name}: {outer} not in {path}'
        if method:
            body = source[match.end():].partition('\n')[2]
            end = re.search(r'^\S', body, re.M)  # the class ends here
            body = body[:end.start()] if end else body
            assert re.search(rf'^    def {method}\b', body, re.M), \
                f'{name}: {obj} not in {path}'


@pytest.mark.parametrize('name', CHAPTERS)
def test_no_measured_number_typed_in_prose(name):
    """Accuracies, seconds, speed-ups and differences in the prose come
    from glue, never typed: no decimal followed by a unit or 'x' outside
    code cells and glue roles."""
    typed = re.findall(r'(?<![\w`.])\d+\.\d+ ?(?:s\b|sec|seconds|%|x\b)',
                       prose(name))
    assert typed == []


@pytest.mark.parametrize('name', CHAPTERS)
def test_every_glue_reference_is_glued(name):
    """Each {glue:md}`key` in the prose is glued by a code cell."""
    text = open(os.path.join(BOOK, name)).read()
    glued = set(re.findall(r"glue_text\(f?'([\w{}]+)'", text))
    patterns = [re.compile('^' + re.sub(r'\{\w+\}', r'[\\w.]+', g) + '$')
                for g in glued]
    for key in re.findall(r'\{glue:md\}`([\w.]+)`', text):
        assert any(p.match(key) for p in patterns), key
