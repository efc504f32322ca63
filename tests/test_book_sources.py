"""The chapters' sources keep the book's promises (fast, no execution)."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOK = os.path.join(ROOT, 'book')
CHAPTERS = sorted(
    f
    for f in os.listdir(BOOK)
    if f.endswith('.md')
    and '\nkernelspec:' in open(os.path.join(BOOK, f)).read()
)
CELL = re.compile(
    r'^```\{code-cell\}[^\n]*\n(.*?)^```', re.DOTALL | re.MULTILINE
)


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
        assert not re.search(r'^(def|class) ', cell, re.MULTILINE), cell[:80]


@pytest.mark.parametrize('name', CHAPTERS)
def test_literalincludes_name_real_objects(name):
    """Each literalinclude :pyobject: exists in the file it points at, so
    the page shows real library source."""
    text = open(os.path.join(BOOK, name)).read()
    for path, obj in re.findall(
        r'```\{literalinclude\} (\S+)\n:pyobject: (\S+)', text
    ):
        source = open(os.path.normpath(os.path.join(BOOK, path))).read()
        outer, _, method = obj.partition('.')  # Class.method is allowed
        match = re.search(rf'^(def|class) {outer}\b', source, re.MULTILINE)
        assert match, f'{name}: {outer} not in {path}'
        if method:
            body = source[match.end() :].partition('\n')[2]
            end = re.search(r'^\S', body, re.MULTILINE)  # the class ends here
            body = body[: end.start()] if end else body
            assert re.search(rf'^    def {method}\b', body, re.MULTILINE), (
                f'{name}: {obj} not in {path}'
            )


# Every page of the book, notebooks or not, in any folder under book/.
PAGES = sorted(
    os.path.relpath(os.path.join(d, f), BOOK)
    for d, _, files in os.walk(BOOK)
    for f in files
    if f.endswith('.md')
)

# Numbers the prose may type because they are true by construction, not
# measured: LeNet's shapes and sizes, the data set, d2l's settings, the
# book's design choices. Small counts (0 to 10: devices, exercises,
# layers) are allowed too, and so is a quantity with its unit listed here
# whole (a scenario's given '160 MB'). Anything else is glued from a cell.
CONSTANTS = {
    '28',
    '20',
    '50',
    '800',
    '128',
    '16',
    '64',
    '32',
    '256',
    '512',  # LeNet
    '86',
    '85',
    '96',
    '60,000',
    '10,000',
    '70,000',  # data, shards
    '0.2',
    '0.1',
    '0.05',
    '0.01',
    '0.001',  # lr, init scale
    '1.9',
    '1.9.1',
    '3.11',
    '2017',
    '2012',
    '2014',
    '2015',
    '2018',
    '1e-3',
    '1e-4',
    '2019',
    '2020',
    '784',
    '25 MB',  # citations, 28*28 pixels, DDP's bucket
}
# Typed in prose, these could only have been measured: a percentage, a
# ratio "2.6x", a time or a size with its unit.
MEASURED = re.compile(
    r'(?<![\w.\-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)'
    r'(?:\s?(%|x\b|ms\b|s\b|sec\b|seconds\b|minutes\b|MB\b|GB\b|KB\b|'
    r'MiB\b|GiB\b|images/s))?'
)
# A verdict in the past tense reports a measurement.
VERDICT = re.compile(
    r'\b(?:was|were|ran|came out|proved|got|became)\s+(?:\w+\s+)?'
    r'(?:faster|slower|quicker)\b|\b(?:helped|did not help|paid off|'
    r'did not pay off|does not pay off|sped up|slowed down)\b',
    re.IGNORECASE,
)


def page_prose(page):
    """A page's prose: no front matter, code, math, glue roles, inline
    code, links' targets or directive options."""
    text = open(os.path.join(BOOK, page)).read()
    text = re.sub(r'\A---\n.*?\n---\n', '', text, flags=re.DOTALL)
    text = re.sub(
        r'^(```+|~~~+)\{(?:code-cell|eval-rst|literalinclude)'
        r'.*?^\1',
        '',
        text,
        flags=re.DOTALL | re.MULTILINE,
    )
    text = re.sub(
        r'^```[^\n{]*\n.*?^```', '', text, flags=re.DOTALL | re.MULTILINE
    )
    text = re.sub(r'\$\$.*?\$\$|\$[^$]+?\$', ' ', text, flags=re.DOTALL)
    text = re.sub(r'\{[\w:-]+\}`[^`]*`', ' GLUED ', text)
    text = re.sub(r'`[^`]*`', ' ', text)
    text = re.sub(r'\]\([^)]*\)|<a [^>]*>|https?://\S+', ' ', text)
    return re.sub(r'^:[\w-]+:.*$', '', text, flags=re.MULTILINE)


def sentences(page):
    """The prose of a page, one sentence per item."""
    for paragraph in re.split(r'\n\s*\n', page_prose(page)):
        text = ' '.join(paragraph.split())
        yield from (t for t in re.split(r'(?<=[.!?])\s+', text) if t)


def typed_measurements(page):
    """(sentence, token) for every number or verdict the prose types that
    is not a known constant."""
    found = []
    for sentence in sentences(page):
        for match in MEASURED.finditer(sentence):
            number, unit = match.groups()
            if (
                match.group(0) in CONSTANTS  # e.g. a scenario's '160 MB'
                or re.match(r'\d+x\d|\d+(\.\d+){3}', sentence[match.start() :])
            ):
                continue  # a shape such as 28x28, an address 127.0.0.1
            if unit or (
                number not in CONSTANTS and not re.fullmatch(r'10|\d', number)
            ):
                found.append((sentence, match.group(0)))
        if 'GLUED' not in sentence:
            found += [
                (sentence, m.group(0)) for m in VERDICT.finditer(sentence)
            ]
    return found


@pytest.mark.parametrize('page', PAGES)
def test_no_measured_number_typed_in_prose(page):
    """Percentages, ratios, times, sizes, counts that are not known
    constants, and past-tense verdicts ("ran faster") come from glue,
    never typed: outside code, math and glue roles the prose holds none."""
    assert typed_measurements(page) == []


@pytest.mark.parametrize(
    'text',
    [
        'a speed-up of 2.6x',
        'it took 51 ms',
        'at 87% of its tolerance',
        'the busiest device moves 3 times less, 61,706 values',
        'two devices were slower than one',
        'bucketing did not pay off',
    ],
)
def test_typed_measurement_is_caught(tmp_path, monkeypatch, text):
    """The scanner above can fail: each of these typed claims is found."""
    (tmp_path / 'page.md').write_text(f'# Page\n\nHere {text}.\n')
    monkeypatch.setattr('test_book_sources.BOOK', str(tmp_path))
    assert typed_measurements('page.md') != []


def test_constants_and_glue_pass(tmp_path, monkeypatch):
    """Known constants, shapes, code, math and glued values are not
    flagged."""
    (tmp_path / 'page.md').write_text(
        '# Page\n\nLeNet reads 28x28 images; 60,000 of them, batches of '
        '256, learning rate 0.2 on 2 devices. It ran faster: '
        '{glue:md}`x`x. `t = 3.5 s` and $2(k-1)N/k$.\n'
    )
    monkeypatch.setattr('test_book_sources.BOOK', str(tmp_path))
    assert typed_measurements('page.md') == []


@pytest.mark.parametrize('name', CHAPTERS)
def test_every_glue_reference_is_glued(name):
    """Each {glue:md}`key` in the prose is glued by a code cell."""
    text = open(os.path.join(BOOK, name)).read()
    glued = set(re.findall(r"glue_text\(f?'([\w{}]+)'", text))
    patterns = [
        re.compile('^' + re.sub(r'\{\w+\}', r'[\\w.]+', g) + '$')
        for g in glued
    ]
    for key in re.findall(r'\{glue:md\}`([\w.]+)`', text):
        assert any(p.match(key) for p in patterns), key


@pytest.mark.parametrize('name', CHAPTERS)
def test_visible_cells_do_not_echo_glued_text(name):
    """A cell the reader sees must not end by echoing the string that
    glue_text returns ('2 and 3'): end it with ';' or assign the result."""
    assert echoing_cells(open(os.path.join(BOOK, name)).read()) == []


def echoing_cells(text):
    """The last lines of visible cells that end with a bare glue_text."""
    found = []
    for cell in CELL.findall(text):
        if 'remove-cell' in cell.partition('\n')[0]:
            continue
        code = [
            line
            for line in cell.splitlines()
            if line.strip() and not line.startswith(':tags:')
        ]
        starts = re.findall(
            r'^(?:dp\.glue_text\(|\S)', '\n'.join(code), re.MULTILINE
        )
        if (
            starts
            and starts[-1].startswith('dp.glue_text(')
            and not code[-1].rstrip().endswith(';')
        ):
            found.append(code[-1])
    return found


def test_echoing_cell_is_caught():
    """The check above can fail: a visible cell ending in a bare
    glue_text is found; with ';' or in a removed cell it is not."""
    cell = "```{code-cell} ipython3\n%s\ndp.glue_text('k', f'{x}')%s\n```\n"
    assert echoing_cells(cell % (':tags: [hide-cell]', '')) != []
    assert echoing_cells(cell % (':tags: [hide-cell]', ';')) == []
    assert echoing_cells(cell % (':tags: [remove-cell]', '')) == []


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapters_show_source_without_docstrings(name):
    """Library code is shown with dp.show_source (no docstring), never a
    literalinclude that prints the whole numpy docstring first; every
    object a show_source cell names exists in d2lpar."""
    import d2lpar as dp

    text = open(os.path.join(BOOK, name)).read()
    assert ':pyobject:' not in text
    for path in re.findall(r'dp\.show_source\(dp\.([\w.]+)\)', text):
        obj = dp
        for part in path.split('.'):
            obj = getattr(obj, part)
        assert dp.show_source(obj).data.strip(), path
