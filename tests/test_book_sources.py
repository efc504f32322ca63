"""The chapters' sources keep the book's promises (fast, no execution)."""

import importlib
import os
import re

import pytest
from conftest import BOOK, CHAPTERS, ROOT

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


# A chapter may define a small function where writing it is the lesson:
# in a cell the reader sees, at most this many lines long. Longer code,
# classes, and any definition in a hidden cell (where the page would do
# its real work out of sight) belong in d2lpar.
MAX_DEF_LINES = 15
HIDDEN_TAGS = ('remove-cell', 'remove-input', 'hide-input')


def cells_with_tags(text):
    """(tags line, code) for every code cell of a page's source."""
    found = []
    for cell in CELL.findall(text):
        first, _, rest = cell.partition('\n')
        if first.startswith(':tags:'):
            found.append((first, rest))
        else:
            found.append(('', cell))
    return found


def bad_definitions(text):
    """Each class, each def in a hidden cell and each def longer than
    MAX_DEF_LINES in a page's code cells, as 'line: why'."""
    found = []
    for tags, code in cells_with_tags(text):
        lines = code.splitlines()
        hidden = any(tag in tags for tag in HIDDEN_TAGS)
        for i, line in enumerate(lines):
            match = re.match(r'(\s*)(async\s+def|def|class)\s', line)
            if not match:
                continue
            if match.group(2) == 'class':
                found.append(f'{line.strip()}: a class (use d2lpar)')
                continue
            if hidden:
                found.append(f'{line.strip()}: a def in a hidden cell')
                continue
            indent, length = len(match.group(1)), 1
            for j, body in enumerate(lines[i + 1 :], 2):
                if body.strip() and len(body) - len(body.lstrip()) <= indent:
                    if not body.lstrip().startswith(')'):  # signature
                        break
                if body.strip():
                    length = j
            if length > MAX_DEF_LINES:
                found.append(f'{line.strip()}: {length} lines')
    return found


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_imports_d2lpar_and_defines_little(name):
    """Every chapter imports d2lpar as dp, never with a star; it defines
    no class, no function in a hidden cell and no function longer than
    MAX_DEF_LINES lines (a short one in a visible cell may be the
    lesson)."""
    text = open(os.path.join(BOOK, name)).read()
    cells = code_cells(name)
    assert any('import d2lpar as dp' in c for c in cells)
    for cell in cells:
        assert 'import *' not in cell
    assert bad_definitions(text) == []


def test_definition_rule_can_fail():
    """The rule above can fail: a class, a def in a removed cell and a
    16-line def are found; a 15-line def in a visible or hide-cell cell
    with a multi-line signature is not."""
    cell = '```{code-cell} ipython3\n%s\n%s\n```\n'
    short = 'def f(a,\n      b):\n' + '    a += 1\n' * 12 + '    return a'
    long = 'def f(a):\n' + '    a += 1\n' * 14 + '    return a'
    assert len(short.splitlines()) == 15 and len(long.splitlines()) == 16
    assert bad_definitions(cell % ('', short)) == []
    assert bad_definitions(cell % (':tags: [hide-cell]', short)) == []
    assert bad_definitions(cell % ('', long)) == ['def f(a):: 16 lines']
    hidden = bad_definitions(cell % (':tags: [remove-cell]', short))
    assert hidden == ['def f(a,: a def in a hidden cell']
    assert bad_definitions(cell % ('', 'class A:\n    pass')) != []
    nested = 'for i in range(2):\n    ' + long.replace('\n', '\n    ')
    assert bad_definitions(cell % ('', nested)) == ['def f(a):: 16 lines']


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
    '2022',
    '784',
    '25 MiB',  # citations, 28*28 pixels, DDP's bucket (bucket_cap_mb=25)
    '1 MiB',  # DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)
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


# Fenced blocks whose content is not prose; other directives
# (admonition, note, figure) keep their content, without the fences.
NOT_PROSE = ('', 'code-cell', 'eval-rst', 'literalinclude', 'include')


def drop_fenced_code(text):
    """The text without code blocks and non-prose directives, and
    without the fence lines of the other directives."""
    kept, closing = [], []  # closing: the fences of the open blocks
    skipping = None  # the fence that ends the code block being dropped
    for line in text.splitlines():
        fence = re.match(r'(```+|~~~+)\s*(?:\{([\w:-]+)\})?', line)
        if skipping:
            if line.strip() == skipping:
                skipping = None
            continue
        if fence and line.strip() in closing:
            closing.remove(line.strip())
            continue
        if fence:
            if (fence.group(2) or '') in NOT_PROSE:
                skipping = fence.group(1)
            else:
                closing.append(fence.group(1))
            continue
        kept.append(line)
    return '\n'.join(kept)


def clean(text):
    """Prose only: no front matter, code, math, glue roles, inline code,
    links' targets, directive options or fences."""
    text = re.sub(r'\A---\n.*?\n---\n', '', text, flags=re.DOTALL)
    text = drop_fenced_code(text)
    text = re.sub(r'\$\$.*?\$\$|\$[^$]+?\$', ' ', text, flags=re.DOTALL)
    text = re.sub(r'\{[\w:-]+\}`[^`]*`', ' GLUED ', text)
    text = re.sub(r'`[^`]*`', ' ', text)
    text = re.sub(r'\]\([^)]*\)|<a [^>]*>|https?://\S+', ' ', text)
    return re.sub(r'^:[\w-]+:.*$', '', text, flags=re.MULTILINE)


def page_prose(page):
    """A page's prose (see clean); ``page`` is relative to book/ or an
    absolute path."""
    return clean(open(os.path.join(BOOK, page)).read())


# A code cell, whatever its fence: (fence, first line, body).
ANY_CELL = re.compile(
    r'^(```+)\{code-cell\}[^\n]*\n(.*?)^\1[ \t]*$', re.DOTALL | re.MULTILINE
)


def guards(code):
    """True for a cell removed from the page that asserts something: a
    build-failing check of what the prose next to it says."""
    first = code.partition('\n')[0]
    return 'remove-cell' in first and bool(
        re.search(r'^\s*assert\b', code, re.MULTILINE)
    )


def paragraphs(text):
    """(paragraph, guarded) for each prose paragraph of a page's source,
    cleaned; guarded when a guarding cell (see guards) directly precedes
    or follows it, with only blank lines or fences between."""
    pieces, pos = [], 0
    for match in ANY_CELL.finditer(text):
        pieces += [text[pos : match.start()], guards(match.group(2))]
        pos = match.end()
    pieces.append(text[pos:])
    found = []
    for i in range(0, len(pieces), 2):
        paras = [
            ' '.join(p.split())
            for p in re.split(r'\n\s*\n', clean(pieces[i]))
            if p.strip()
        ]
        before = i > 0 and pieces[i - 1]
        after = i + 1 < len(pieces) and pieces[i + 1]
        for j, para in enumerate(paras):
            guarded = (j == 0 and before) or (j == len(paras) - 1 and after)
            found.append((para, bool(guarded)))
    return found


def split_sentences(paragraph):
    return [t for t in re.split(r'(?<=[.!?])\s+', paragraph) if t]


def sentences(page):
    """The prose of a page, one sentence per item."""
    text = open(os.path.join(BOOK, page)).read()
    for paragraph, _ in paragraphs(text):
        yield from split_sentences(paragraph)


def typed_measurements(page):
    """(sentence, token) for every number the prose types that is not a
    known constant, and every verdict that is neither glued nor guarded
    by an assert in a removed cell next to its paragraph."""
    found = []
    text = open(os.path.join(BOOK, page)).read()
    for paragraph, guarded in paragraphs(text):
        for sentence in split_sentences(paragraph):
            for match in MEASURED.finditer(sentence):
                number, unit = match.groups()
                if (
                    match.group(0) in CONSTANTS
                    or re.match(  # '160 MB'
                        r'\d+x\d|\d+(\.\d+){3}', sentence[match.start() :]
                    )
                ):
                    continue  # a shape such as 28x28, an address 127.0.0.1
                if unit or (
                    number not in CONSTANTS
                    and not re.fullmatch(r'10|\d', number)
                ):
                    found.append((sentence, match.group(0)))
            if 'GLUED' not in sentence and not guarded:
                found += [
                    (sentence, m.group(0)) for m in VERDICT.finditer(sentence)
                ]
    return found


@pytest.mark.parametrize('page', PAGES)
def test_no_measured_number_typed_in_prose(page):
    """Percentages, ratios, times, sizes, counts that are not known
    constants come from glue, never typed: outside code, math and glue
    roles the prose holds none. A past-tense verdict ("ran faster") is
    glued, or typed in a paragraph next to a removed cell that asserts
    it."""
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


GUARD = '```{code-cell} ipython3\n:tags: [%s]\n%s\n```\n'


@pytest.mark.parametrize(
    'page, flagged',
    [
        ('Two devices were faster.\n', True),
        (
            'Two devices were faster.\n\n' + GUARD % ('remove-cell', 'x = 1'),
            True,
        ),  # a removed cell, but no assert
        (
            'Two devices were faster.\n\n'
            + GUARD % ('hide-cell', 'assert a < b'),
            True,
        ),  # not removed
        (
            'Two devices were faster.\n\nAnother paragraph.\n\n'
            + GUARD % ('remove-cell', 'assert a < b'),
            True,
        ),  # not next to it
        (
            'Two devices were faster.\n\n'
            + GUARD % ('remove-cell', 'assert a < b'),
            False,
        ),
        (
            GUARD % ('remove-cell', 'assert a < b')
            + '\nTwo devices were faster.\n',
            False,
        ),
        (
            GUARD
            % ('remove-cell', 'assert a < b')
            + '\n````{admonition} Solution\n:class: dropdown\n\n'
            'Buckets did not help.\n````\n',
            False,
        ),
    ],
)
def test_typed_verdict_needs_a_guard(tmp_path, monkeypatch, page, flagged):
    """A typed verdict passes only in a paragraph directly before or
    after a remove-cell cell holding an assert; the rule can fail."""
    (tmp_path / 'page.md').write_text(f'# Page\n\nIntro.\n\n{page}')
    monkeypatch.setattr('test_book_sources.BOOK', str(tmp_path))
    verdicts = [t for _, t in typed_measurements('page.md')]
    assert bool(verdicts) == flagged, verdicts


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
    object a show_source cell names exists in d2lpar (in d2lpar.torch
    for a cell marked ``#@tab pytorch``, whose ``dp`` is the twin)."""
    import d2lpar as dp

    text = open(os.path.join(BOOK, name)).read()
    assert ':pyobject:' not in text
    shown = {'d2lpar': [], 'd2lpar.torch': []}
    for _, code in cells_with_tags(text):
        twin = code.lstrip().startswith('#@tab pytorch')
        shown['d2lpar.torch' if twin else 'd2lpar'] += re.findall(
            r'dp\.show_source\(dp\.([\w.]+)\)', code
        )
    for module, paths in shown.items():
        if paths and module == 'd2lpar.torch':
            pytest.importorskip('torch')  # make test-numpy126 has none
        for path in paths:
            obj = importlib.import_module(module)
            for part in path.split('.'):
                obj = getattr(obj, part)
            assert dp.show_source(obj).data.strip(), path


# A reference by position breaks when a chapter is inserted: name the
# page with a {doc} link instead. ('The section below' within one page
# is not a cross-reference and is allowed.)
POSITIONAL = re.compile(
    r'\b(?:next|previous|preceding|following|prior|last|earlier|later|'
    r'coming|subsequent)\s+(?:chapter|page|section|part|lesson)s?\b'
    r'|\b(?:chapter|page|section)s?\s+(?:after|before)\s+(?:next|this|'
    r'that|the\s+next|the\s+previous)\b'
    r'|\bthe\s+chapter\s+before\b',
    re.IGNORECASE,
)
HOMEWORK = os.path.join(ROOT, 'homework')
PROSE_PAGES = PAGES + sorted(
    os.path.join(HOMEWORK, f)
    for f in os.listdir(HOMEWORK)
    if f.endswith('.md')
)

# Every book and homework page, each test named by the page's path.
each_prose_page = pytest.mark.parametrize(
    'page',
    PROSE_PAGES,
    ids=lambda p: (
        os.path.relpath(p, ROOT) if os.path.isabs(p) else f'book/{p}'
    ),
)


def positional_references(text):
    """Each phrase of a page's prose that points at another page by its
    position ('the next chapter'), with the sentence around it."""
    found = []
    for paragraph, _ in paragraphs(text):
        for sentence in split_sentences(paragraph):
            found += [
                f'{m.group(0)!r} in: {sentence}'
                for m in POSITIONAL.finditer(sentence)
            ]
    return found


@each_prose_page
def test_no_positional_cross_references(page):
    """Book and homework pages name other pages with {doc} links, never
    by position ('the next chapter', 'an earlier chapter'), outside code
    and math."""
    text = open(os.path.join(BOOK, page)).read()
    assert positional_references(text) == []


@pytest.mark.parametrize(
    'text',
    [
        'As the next chapter shows.',
        'See the Previous Chapter.',
        'in the chapter after next',
        'the chapter before this one',
        'a later chapter builds it',
        'An earlier chapter measured it.',
        'the following section',
        'on the next page',
        'train_batch (next chapter) divides',
        'the last chapter of this part',
    ],
)
def test_positional_reference_is_caught(text):
    """The check above can fail: each phrase is found in prose, and none
    is found inside inline code, a code cell or a {doc} link's text."""
    assert positional_references(f'# Page\n\n{text}\n') != []
    code = f'# Page\n\n`{text}` and {{doc}}`{text} <x>`.\n\n'
    code += f'```{{code-cell}} ipython3\n# {text}\n```\n'
    assert positional_references(code) == []


# A glued value is a number, a word or a short phrase: more words than
# this in its literal text is a sentence assembled by Python.
MAX_GLUED_WORDS = 4


def glued_phrases(text):
    """(key, why) for each dp.glue_text call of a page's code whose value
    reads as assembled prose: more than MAX_GLUED_WORDS words of literal
    text (a formatted value counts as one), or a list joined into words
    (' and '.join)."""
    import ast

    def render(node):
        """The text the expression can produce (its wordiest branch),
        each computed value as the word X."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return ''.join(
                ' X ' if isinstance(v, ast.FormattedValue) else render(v)
                for v in node.values
            )
        if isinstance(node, ast.IfExp):
            return max(render(node.body), render(node.orelse), key=count)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return render(node.left) + render(node.right)
        # A phrase picked from typed alternatives ({...}[key] or
        # {...}.get(key, default)) is glued as its wordiest alternative.
        if isinstance(node, ast.Subscript) and isinstance(
            node.value, ast.Dict
        ):
            return max(map(render, node.value.values), key=count)
        # ... or from a dict the page names first (word = {...}; word[v]).
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in named_dicts
        ):
            return max(map(render, named_dicts[node.value.id]), key=count)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == 'get'
            and isinstance(node.func.value, ast.Dict)
        ):
            branches = node.func.value.values + node.args[1:]
            return max(map(render, branches), key=count)
        return ' X '

    def count(text):
        """Words of prose; markup (a link, a code block) is not prose."""
        text = re.sub(r'<[^>]*>|```.*?(```|$)', ' ', text, flags=re.S)
        return len(re.findall(r'[A-Za-z]+', text))

    def words(node):
        return count(render(node))

    trees = []
    for _, code in cells_with_tags(text):
        try:
            trees.append(ast.parse(re.sub(r'^[%!].*$', '', code, flags=re.M)))
        except SyntaxError:
            continue
    named_dicts = {  # every value a name bound to a dict literal holds
        node.targets[0].id: node.value.values
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Dict)
    }
    found = []
    for tree in trees:
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == 'glue_text'
                and len(node.args) >= 2
            ):
                continue
            key = ast.unparse(node.args[0])
            value = node.args[1]
            joined = [
                n
                for n in ast.walk(value)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == 'join'
                and isinstance(n.func.value, ast.Constant)
                and re.search(r'[A-Za-z]', str(n.func.value.value))
            ]
            if joined:
                found.append((key, 'a list joined with words'))
            elif words(value) > MAX_GLUED_WORDS:
                found.append((key, f'{words(value)} words'))
    return found


def test_assembled_glue_is_caught():
    """The scanner above can fail: a glued clause and a list joined with
    'and' are found; a number, a unit and a one-word verdict are not."""
    cell = '```{code-cell} ipython3\n:tags: [remove-cell]\n%s\n```\n'
    bad = [
        "dp.glue_text('a', f'{x} ms, so two devices were faster')",
        "dp.glue_text('b', ' and '.join(map(str, ks)))",
        "dp.glue_text('c', 'one device' if n == 1 else f'{n} devices "
        "and some more words')",
        "dp.glue_text('g', {'a': 'faster', 'b': 'slower in every round "
        "but one'}[v])",
        "dp.glue_text('h', {'a': 'faster'}.get(v, 'neither faster nor "
        "slower here'))",
        "says = {'a': 'faster', 'b': 'slower in every round but one'}",
        "dp.glue_text('j', says[v])",
    ]
    good = [
        "dp.glue_text('i', {'a': 'faster than', 'b': 'slower than'}[v])",
        "dp.glue_text('d', f'{x:.1f}')",
        "dp.glue_text('e', f'{x:.1f} ms per step')",
        "dp.glue_text('f', 'faster' if a < b else 'not measurably faster')",
    ]
    assert [k for k, _ in glued_phrases(cell % '\n'.join(bad))] == [
        "'a'",
        "'b'",
        "'c'",
        "'g'",
        "'h'",
        "'j'",
    ]
    assert glued_phrases(cell % '\n'.join(good)) == []


@pytest.mark.parametrize('page', PROSE_PAGES)
def test_no_assembled_glue(page):
    """A page glues numbers and single words, never a sentence assembled
    by Python (issue 26): glued_phrases finds nothing in its cells."""
    text = open(os.path.join(BOOK, page)).read()
    assert glued_phrases(text) == []


def report_assembled_glue():
    """Print the glued values that read as assembled prose, per page (run
    this file): what test_no_assembled_glue fails on, all pages at once."""
    for page in PROSE_PAGES:
        for key, why in glued_phrases(open(os.path.join(BOOK, page)).read()):
            print(f'{os.path.basename(page)}: {key} ({why})')


if __name__ == '__main__':
    report_assembled_glue()


@pytest.mark.parametrize('name', CHAPTERS)
def test_chapter_links_its_notebook(name):
    """Every chapter (its notebook is built beside the HTML, by
    scripts/chapter_notebook.py) says where to get it, in each framework
    it has; intro and install, which tell a reader where to start, link
    the training chapter's instead."""
    text = open(os.path.join(BOOK, name)).read()
    stem = name[: -len('.md')]
    if stem in ('intro', 'install'):
        assert 'href="../notebooks/training.ipynb"' in text, name
        return
    assert f'href="../notebooks/{stem}.ipynb"' in text, name
    if re.search(r'^#@tab pytorch', text, re.M):
        assert f'href="../notebooks/{stem}-pytorch.ipynb"' in text, name


# A {doc} link without its own text prints the page's title.
BARE_DOC = re.compile(r'\{doc\}`([^`<>]+)`')


def colon_titled_pages():
    """Pages whose title holds a colon or a comma ('split_batch: one
    shard per device', 'Training on one device, then two'): printed
    inside a sentence, such a title breaks it."""
    titled = set()
    for name in os.listdir(BOOK):
        if name.endswith('.md'):
            for line in open(os.path.join(BOOK, name)):
                if line.startswith('# '):
                    if ':' in line or ',' in line:
                        titled.add(name[:-3])
                    break
    return titled


def bare_links_to_colon_titles(text, titled):
    """Each {doc} link in ``text`` that would print a title with a colon."""
    return [
        m.group(0)
        for m in BARE_DOC.finditer(text)
        if os.path.basename(m.group(1).strip()) in titled
    ]


@each_prose_page
def test_links_to_colon_titles_carry_their_own_text(page):
    """A link to a page whose title has a colon gives short text of its
    own ({doc}`the concise chapter <concise>`), so that no sentence reads
    'Exercise 1 of The concise version: the framework does the
    bookkeeping times ...'."""
    titled = colon_titled_pages()
    assert {'concise', 'training'} <= titled  # the rule reads titles
    text = open(os.path.join(BOOK, page)).read()
    assert bare_links_to_colon_titles(text, titled) == []


def test_bare_link_to_colon_title_is_caught():
    titled = colon_titled_pages()
    assert bare_links_to_colon_titles('see {doc}`concise`.', titled) != []
    assert (
        bare_links_to_colon_titles(
            'see {doc}`the concise chapter <concise>`.', titled
        )
        == []
    )
