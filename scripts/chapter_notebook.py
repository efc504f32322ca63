"""Turn a book chapter (MyST Markdown) into a notebook for plain Jupyter.

Usage: python scripts/chapter_notebook.py book/CHAPTER.md OUT.ipynb
       python scripts/chapter_notebook.py [--executed DIR] --into OUT_DIR \
           book/A.md ...

The book's pages use Sphinx features a plain Jupyter does not render:
``{literalinclude}`` directives (the library's source), ``{glue:md}``
roles (numbers computed by the page), admonitions and cross-references.
Here each becomes something readable with only ``d2lpar[notebook]``
installed: a literalinclude becomes a code cell displaying the source of
the same function (so the code a chapter explains is in the notebook),
a glue role the value the book's build glued (read from its executed
notebook in ``--executed DIR``; without one, the glued name in code
font), an admonition a bold title, a role its text (a ``{py:func}`` name in
code font).

A student gets what a student needs, not the book's plumbing: the
statements of ``remove-cell`` cells that only glue, assert or compute
names nothing later reads are dropped (what a later cell needs, such as
the imports, stays), and the exercises' solutions, code and text, move
to a "Solutions" section after all the exercises, folded (JupyterLab's
collapsed heading and each cell's ``jupyter.source_hidden``). The first
cell under the title says how to install the library from the book's
site (D2LPAR_SITE_URL, D2LPAR_REPOSITORY_URL: scripts/build-book.sh sets
them from _config.yml).
A page with code in both frameworks (cells marked ``#@tab mxnet`` and
``#@tab pytorch``, d2l's convention: d2lpar/pages/tabs.py) becomes two
notebooks: NAME.ipynb with the shared and MXNet cells, NAME-pytorch.ipynb
with the shared and PyTorch cells (no MXNet import anywhere: it runs with
``d2lpar[torch,notebook]`` alone); the page's framework tab-set keeps the
chosen framework's text.
Called by scripts/build-book.sh and tests/test_install_notebooks.py.
"""

import ast
import importlib.metadata
import json
import os
import re
import sys

import jupytext
import nbformat

# The install sentences of a notebook's header, shared with the
# homework's notebooks (install_commands: also read by the tests).
from d2lpar.pages.install import (  # noqa: F401
    EXTRAS,
    TORCH_EXTRAS,
    install_commands,
    install_note,
)
from d2lpar.pages.tabs import FRAMEWORKS, framework_of, keep_framework

LITERALINCLUDE = re.compile(
    r'^(`{3,})\{literalinclude\}[ \t]+(?P<path>\S+)[ \t]*\n'
    r'(?P<options>(?:[ \t]*:[\w-]+:.*\n)*)\1[ \t]*$',
    re.M,
)
GLUE = re.compile(r'\{glue(?::\w+)?\}`([^`]+)`')
# The block form: ```{glue:md} name, options, closing fence.
GLUE_BLOCK = re.compile(
    r'^([ \t]*)(`{3,})\{glue(?::\w+)?\}[ \t]+(\S+)[ \t]*\n'
    r'(?:[ \t]*:[\w-]+:.*\n)*[ \t]*\2[ \t]*$',
    re.M,
)
ROLE = re.compile(r'\{(?:doc|ref|numref|term|download|eq)\}`([^`]+)`')
# Python-domain roles ({py:func}, {py:mod}, ...): a name, shown in code font.
PY_ROLE = re.compile(r'\{py:\w+\}`([^`]+)`')
FENCE_OPEN = re.compile(r'^(`{3,}|:{3,})\{([\w-]+)\}[ \t]*(.*)$')
OPTION = re.compile(r'^[ \t]*:[\w-]+:.*$')
SOLUTION = re.compile(
    r'^(`{3,}|:{3,})\{admonition\}[ \t]+(Solutions?\b[^\n]*)\n(.*?)^\1[ \t]*$',
    re.M | re.S,
)
# The page's framework switcher (sphinx-design): a tab-set whose items
# carry ``:sync: mxnet`` / ``:sync: pytorch``.
TAB_SET = re.compile(
    r'^(:{3,}|`{3,})\{tab-set\}[^\n]*\n(.*?)^\1[ \t]*$\n?', re.M | re.S
)
TAB_ITEM = re.compile(
    r'^(:{3,}|`{3,})\{tab-item\}[^\n]*\n'
    r'((?:[ \t]*:[\w-]+:[^\n]*\n)*)(.*?)^\1[ \t]*$',
    re.M | re.S,
)
NOTEBOOK_LINK = 'href="../notebooks/'
BOOK = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'book')
# JupyterLab folds the cells under a heading with this metadata.
COLLAPSED = 'jp-MarkdownHeadingCollapsed'
HIDDEN = {'source_hidden': True, 'outputs_hidden': True}
NOTE = (
    '**About this notebook.** It was made from a chapter of the book '
    '"Data parallelism, really" to run in plain Jupyter, with d2lpar '
    '{version}, the library the book ran.\n\n'
    '- **Install:** {install}\n'
    '- **Numbers:** {numbers}\n'
    '- **Exercises:** their solutions are in a folded section at the '
    'end; open it once you have tried them.'
)
NUMBERS = {
    True: "the numbers in the text are those of the book's build; run "
    "the cells top to bottom to compute this machine's.",
    False: 'where the book shows a number computed by a cell, this text '
    'shows its name in code font; run the cells top to bottom to see the '
    'values.',
}


def chapter_extras(nb, framework='mxnet'):
    """The extras a chapter's notebook needs: ``d2l`` too where a cell
    imports d2l itself (its pins hold it to Python 3.11); a PyTorch
    notebook's are ``torch,notebook``."""
    if framework == 'pytorch':
        return TORCH_EXTRAS
    code = '\n'.join(c.source for c in nb.cells if c.cell_type == 'code')
    d2l = re.search(r'^\s*(from|import) d2l\b', code, re.M)
    return EXTRAS + (',d2l' if d2l else '')


def frameworks(nb):
    """The frameworks a chapter's cells are marked with (empty: none)."""
    return {framework_of(c) for c in nb.cells} - {None}


def chosen_tab(text, framework):
    """``text`` with each framework tab-set replaced by the body of its
    item for ``framework`` (``:sync: NAME``), less a paragraph that links
    the chapter's notebook (the reader is in it)."""

    def choose(match):
        for item in TAB_ITEM.finditer(match.group(2)):
            if re.search(
                rf'^[ \t]*:sync:[ \t]*{framework}\b', item.group(2), re.M
            ):
                paragraphs = item.group(3).split('\n\n')
                kept = [p for p in paragraphs if NOTEBOOK_LINK not in p]
                return '\n\n'.join(kept).rstrip('\n') + '\n'
        return match.group(0)

    return TAB_SET.sub(choose, text)


def one_framework(cells, framework):
    """The cells of one framework's notebook: the shared cells and
    ``framework``'s (d2lpar.pages.tabs.keep_framework, as the homework's
    notebooks), each markdown cell's tab-set reduced to ``framework``'s
    text."""
    kept = keep_framework(cells, framework)
    for cell in kept:
        if cell.cell_type == 'markdown':
            cell.source = without_self_link(chosen_tab(cell.source, framework))
    return kept


def without_self_link(text):
    """``text`` less its paragraph that links the chapter's own notebook
    ("This chapter as a notebook: ..."), which a page without tabs has
    outside any tab-set (:func:`chosen_tab` drops a tab's)."""
    paragraphs = text.split('\n\n')
    kept = [
        p for p in paragraphs
        if not (NOTEBOOK_LINK in p and p.lstrip().startswith('This chapter as'))
    ]  # fmt: skip
    return '\n\n'.join(kept)


def source_cell(path, options):
    """A code cell displaying what ``literalinclude`` showed."""
    module = path.split('d2lpar/', 1)[-1].removesuffix('.py')
    module = 'd2lpar.' + module.replace('/', '.').removesuffix('.__init__')
    match = re.search(r':pyobject:[ \t]*(\S+)', options)
    target = f'{module}.{match.group(1)}' if match else module
    code = (
        f'# The library code this chapter explains ({target})\n'
        f'import inspect\n'
        f'import {module}\n'
        f'from IPython.display import Code\n'
        f'Code(inspect.getsource({target}), language="python")'
    )
    return nbformat.v4.new_code_cell(code, metadata={'tags': ['source']})


def page_title(name):
    """The title of the book's page ``name`` (its first heading)."""
    path = os.path.join(BOOK, name + '.md')
    if not os.path.exists(path):
        return None
    with open(path) as f:
        titles = re.findall(r'^# (.+)$', f.read(), re.M)
    return titles[0].strip() if titles else None


def role_text(match):
    """A role's text: a ``{doc}`` link's own text, else the page's title
    (a link to it where the site's address is known), else its target."""
    role, target = match.group(0).split('}')[0], match.group(1)
    shown = re.match(r'(.*?)\s*<([^>]*)>$', target)
    if shown:
        return shown.group(1)
    title = page_title(target) if role == '{doc' else None
    if not title:
        return target
    site = os.environ.get('D2LPAR_SITE_URL', '').rstrip('/')
    if site:
        return f'[*{title}*]({site}/book/{target}.html)'
    return f'*{title}*'


def py_role_text(match):
    """A Python-domain role's name in code font: its own text where it
    gives one (``{py:func}`dp.f <d2lpar.f>``` shows ``dp.f``), else its
    target (less a leading ``~``'s module path, as Sphinx shows it)."""
    target = match.group(1)
    shown = re.match(r'(.*?)\s*<([^>]*)>$', target)
    if shown:
        return f'`{shown.group(1)}`'
    if target.startswith('~'):
        target = target[1:].split('.')[-1]
    return f'`{target}`'


def plain_markdown(text, glued=None):
    """Replace directives and roles that only Sphinx renders; a glue role
    becomes its value from ``glued`` (else its name in code font)."""
    glued = glued or {}

    def value(match):
        name = match.group(match.lastindex)
        return glued.get(name, f'`{name}`')

    def block(match):
        indent, name = match.group(1), match.group(3)
        text = glued.get(name, f'`{name}`')
        return '\n'.join(indent + line for line in text.split('\n'))

    text = GLUE_BLOCK.sub(block, text)
    text = GLUE.sub(value, text)
    text = ROLE.sub(role_text, text)
    text = PY_ROLE.sub(py_role_text, text)
    lines, open_fences, after_open = [], [], False
    for line in text.split('\n'):
        match = FENCE_OPEN.match(line)
        if match:
            fence, name, title = match.groups()
            open_fences.append(fence)
            heading = title if name == 'admonition' else name.title()
            lines.append(f'**{heading.strip() or name}**')
            after_open = True
            continue
        if after_open and OPTION.match(line):
            continue  # :class: dropdown and the like
        after_open = False
        if open_fences and line.strip() == open_fences[-1]:
            open_fences.pop()
            continue
        lines.append(line)
    return '\n'.join(lines)


def markdown_pieces(text):
    """A markdown cell's text as (kind, text) in page order: 'source' for
    a literalinclude (text: the match), 'solution' for a solution's
    admonition, 'text' for the rest; '## Exercises' starts a piece."""
    pieces, start = [], 0
    marks = [
        (m.start(), m.end(), 'source', m)
        for m in LITERALINCLUDE.finditer(text)
    ]
    marks += [
        (m.start(), m.end(), 'solution', m) for m in SOLUTION.finditer(text)
    ]
    marks += [
        (m.start(), m.start(), 'heading', m)
        for m in re.finditer(r'^## Exercises[ \t]*$', text, re.M)
    ]
    for begin, end, kind, match in sorted(marks, key=lambda m: m[0]):
        if begin < start:
            continue  # inside a piece already taken
        pieces.append(('text', text[start:begin]))
        if kind != 'heading':
            pieces.append((kind, match))
        start = end
    pieces.append(('text', text[start:]))
    return [(k, t) for k, t in pieces if k != 'text' or t.strip()]


def solution_cell(match, exercise, glued):
    """A solution admonition as a markdown cell titled with its exercise."""
    title, body = match.group(2).strip(), match.group(3)
    body = '\n'.join(
        line for line in body.split('\n') if not OPTION.match(line)
    )
    if exercise and title.startswith('Solution') and title != 'Solutions':
        title = title.replace('Solution', f'Solution to exercise {exercise}')
    # One admonition of all the solutions: the "## Solutions" heading
    # above it already says what it is.
    head = '' if title == 'Solutions' else f'**{title}**\n\n'
    source = plain_markdown(f'{head}{body.strip()}', glued)
    return nbformat.v4.new_markdown_cell(source)


def fold(cell):
    """Mark ``cell`` a folded solution (hidden until the reader opens it)."""
    cell.metadata['jupyter'] = dict(HIDDEN)
    if cell.cell_type == 'markdown':
        cell.metadata['jupyter'].pop('outputs_hidden')
    tags = [t for t in cell.metadata.get('tags', []) if t != 'hide-cell']
    cell.metadata['tags'] = tags + ['solution']
    return cell


PROMPT = re.compile(r'^(?:#+[ \t]+)?(\d+)\.\s', re.M)


def chapter_cells(nb, glued):
    """The chapter's cells in page order, solutions moved to the end: in
    the Exercises section every code cell and solution admonition, and
    the text that follows a solution until the next exercise."""
    cells, solutions = [], []
    exercises, exercise, answering = False, None, False
    for cell in nb.cells:
        if cell.cell_type != 'markdown':
            if exercises:
                solutions.append(fold(cell))
                answering = True
            else:
                cells.append(cell)
            continue
        for kind, piece in markdown_pieces(cell.source):
            if kind == 'source':
                made = source_cell(piece.group('path'), piece.group('options'))
                (solutions if exercises else cells).append(
                    fold(made) if exercises else made
                )
                answering = exercises
                continue
            if kind == 'solution':
                solutions.append(fold(solution_cell(piece, exercise, glued)))
                answering = True
                continue
            exercises = exercises or piece.lstrip().startswith('## Exercises')
            prompt = PROMPT.search(piece)
            if answering:  # the solution's text, up to the next exercise
                rest = piece[: prompt.start()] if prompt else piece
                text = plain_markdown(rest, glued).strip('\n')
                if text.strip():
                    solutions.append(fold(nbformat.v4.new_markdown_cell(text)))
                piece = piece[prompt.start() :] if prompt else ''
                answering = not prompt
            numbers = PROMPT.findall(piece)
            exercise = numbers[-1] if numbers else exercise
            source = plain_markdown(piece, glued).strip('\n')
            if source.strip():
                cells.append(nbformat.v4.new_markdown_cell(source))
    if solutions:
        heading = nbformat.v4.new_markdown_cell(
            '## Solutions\n\nOpen a cell to read it (the solutions are '
            'folded): try each exercise first.',
            metadata={COLLAPSED: True, 'tags': ['solution']},
        )
        cells += [heading] + solutions
    return cells


PLUMBING = {'glue_text', 'glue', 'framework_tabs'}
IDENTIFIER = re.compile(r'[A-Za-z_]\w*')


SCOPES = (
    ast.ListComp,
    ast.SetComp,
    ast.GeneratorExp,
    ast.DictComp,
    ast.Lambda,
    ast.FunctionDef,
)


def outer_nodes(node):
    """``node`` and its descendants, not entering a comprehension, a
    lambda or a function body (their names do not leak)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, SCOPES):
            yield from outer_nodes(child)
        elif isinstance(child, ast.FunctionDef):
            yield child


def bound_names(stmt):
    """The names a statement binds or changes (``x[0] = 1`` changes x)."""
    names = set()
    for node in outer_nodes(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split('.')[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = getattr(node, 'targets', None) or [node.target]
            for target in targets:
                while isinstance(target, (ast.Attribute, ast.Subscript)):
                    target = target.value
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


def glue_only(stmt, needed):
    """True where ``stmt`` only glues (a call of ``glue_text``, or a loop
    or branch of nothing else whose names no later code reads)."""
    if isinstance(stmt, ast.Expr):
        func = getattr(stmt.value, 'func', None)
        return getattr(func, 'attr', getattr(func, 'id', None)) in PLUMBING
    if isinstance(stmt, (ast.For, ast.If)):
        inner = stmt.body + stmt.orelse
        return not bound_names(stmt) & needed and all(
            glue_only(s, needed) for s in inner
        )
    return False


def plumbing(stmt, needed):
    """True where ``stmt`` only glues, asserts, or binds names no later
    code reads (a placeholder for the prose)."""
    if isinstance(stmt, (ast.Assert, ast.Pass)):
        return True
    if isinstance(stmt, ast.Delete):  # ``del`` of names: cleanup only
        return all(isinstance(t, ast.Name) for t in stmt.targets)
    if isinstance(stmt, ast.Expr):
        func = getattr(stmt.value, 'func', None)
        name = getattr(func, 'attr', getattr(func, 'id', None))
        return name in PLUMBING or isinstance(stmt.value, ast.Constant)
    simple = (
        ast.Assign,
        ast.AugAssign,
        ast.AnnAssign,
        ast.Import,
        ast.ImportFrom,
        ast.FunctionDef,
    )
    compound = (ast.For, ast.While, ast.If, ast.With, ast.Try)
    if isinstance(stmt, simple):
        return not bound_names(stmt) & needed
    if isinstance(stmt, compound):
        inner = stmt.body + getattr(stmt, 'orelse', [])
        inner += getattr(stmt, 'finalbody', [])
        for handler in getattr(stmt, 'handlers', []):
            inner += handler.body
        return not bound_names(stmt) & needed and all(
            plumbing(s, needed) for s in inner
        )
    return False


def statements(source):
    """(statement, its text with the comments above it, the index of
    that text's first line) of a cell; None where ast cannot read it."""
    lines = source.split('\n')
    # Line magics (%matplotlib inline) read as pass.
    parsed = '\n'.join(
        re.sub(r'^(\s*)[%!].*', r'\1pass', line) for line in lines
    )
    try:
        body = ast.parse(parsed).body
    except SyntaxError:
        return None
    found = []
    for i, stmt in enumerate(body):
        first = body[i - 1].end_lineno if i else 0
        text = '\n'.join(lines[first : stmt.end_lineno])
        found.append((stmt, text, first))
    return found


def surely_bound(stmt):
    """The names ``stmt`` binds whatever happens (not a loop's)."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef)):
        return bound_names(stmt)
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return set()
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names, stack = set(), list(targets)
    while stack:
        target = stack.pop()
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            stack += target.elts
        elif isinstance(target, ast.Starred):
            stack.append(target.value)
    return names


def targets_of(node):
    """The names a target (``k``, ``a, b``, ``*rest``) binds."""
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def reads(node, local=frozenset()):
    """The names ``node`` reads from outside itself: not a
    comprehension's or a loop's own variables inside it, nor a function's
    or lambda's arguments inside its body."""
    found = set()
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id not in local:
            found.add(node.id)
    elif isinstance(node, ast.For):
        found |= reads(node.iter, local)
        inner = local | targets_of(node.target)
        for child in node.body + node.orelse:
            found |= reads(child, inner)
    elif isinstance(
        node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
    ):
        inner = local
        for i, gen in enumerate(node.generators):
            found |= reads(gen.iter, local if i == 0 else inner)
            inner = inner | targets_of(gen.target)
            for cond in gen.ifs:
                found |= reads(cond, inner)
        dict_comp = isinstance(node, ast.DictComp)
        for part in [node.key, node.value] if dict_comp else [node.elt]:
            found |= reads(part, inner)
    elif isinstance(node, (ast.Lambda, ast.FunctionDef)):
        args = node.args
        names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a}
        for default in args.defaults + args.kw_defaults:
            if default is not None:
                found |= reads(default, local)
        body = node.body if isinstance(node.body, list) else [node.body]
        for child in body:
            found |= reads(child, local | names)
    else:
        for child in ast.iter_child_nodes(node):
            found |= reads(child, local)
    return found


def live(stmt, needed):
    """Update ``needed`` to the names needed before ``stmt``: those it
    binds for sure leave, those it reads join."""
    needed.difference_update(surely_bound(stmt))
    needed.update(reads(stmt))


def strip_glue(stmt, text, first, needed, asserts=False):
    """``text`` (lines ``first + 1`` on of the cell) of a kept ``stmt``
    without the glue calls nested in it, and its asserts where
    ``asserts`` (an emptied body gets ``pass``)."""
    lines = text.split('\n')
    drop, keep_one = set(), {}
    for node in ast.walk(stmt):
        for field in ('body', 'orelse', 'finalbody'):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            gone = [
                s
                for s in body
                if glue_only(s, needed)
                or asserts
                and isinstance(s, ast.Assert)
            ]
            for s in gone:
                drop |= set(range(s.lineno - 1 - first, s.end_lineno - first))
            if gone and len(gone) == len(body):
                keep_one[body[0].lineno - 1 - first] = (
                    body[0].col_offset,
                    getattr(node, 'lineno', first + 1) - 1 - first,
                )
    out = []
    for i, line in enumerate(lines):
        if i in keep_one:
            col, owner = keep_one[i]
            if owner not in drop:  # an emptied body whose block stays
                out.append(' ' * col + 'pass')
        elif i not in drop:
            out.append(line)
    return '\n'.join(out)


def prune(source, needed, removed=True):
    """The statements of a cell that the student needs, in order, with
    the comments above them; updates ``needed`` to the names needed
    before the cell. From a ``removed`` cell only what later code reads
    is kept (and line magics); from a visible cell all but its glue."""
    found = statements(source)
    if found is None:  # not Python we can read: keep it whole
        needed |= set(IDENTIFIER.findall(source))
        return source
    drop = plumbing if removed else glue_only
    kept = []
    for stmt, text, first in reversed(found):
        magic = text.strip().split('\n')[-1].lstrip().startswith(('%', '!'))
        if magic or not drop(stmt, needed):
            kept.insert(0, strip_glue(stmt, text, first, needed, removed))
            live(stmt, needed)
    return '\n'.join(kept).strip('\n')


def drop_plumbing(cells):
    """Drop the book's plumbing: from ``remove-cell`` cells all but what
    later cells read, from the others their glue; and cells left empty."""
    needed, out = set(), []
    for cell in reversed(cells):
        tags = cell.metadata.get('tags', [])
        if cell.cell_type == 'code' and 'source' not in tags:
            cell.source = prune(cell.source, needed, 'remove-cell' in tags)
            if 'remove-cell' in tags:
                tags.remove('remove-cell')
                if not tags:
                    del cell.metadata['tags']
            if not cell.source.strip():
                continue
        out.insert(0, cell)
    return out


D2LPAR_FIRST = (
    '# d2lpar first: beside numpy 1.24 or newer (Python 3.12) it restores\n'
    '# the numpy aliases MXNet 1.9.1 reads while it is imported.\n'
    'import d2lpar as dp\n'
)


def d2lpar_first(cells):
    """Move ``import d2lpar as dp`` above the first import of MXNet (the
    book's own stack, numpy 1.23.5, does not need it; numpy 1.26 does)."""
    for cell in cells:
        if cell.cell_type != 'code':
            continue
        lines = cell.source.split('\n')
        mxnet = [
            i
            for i, line in enumerate(lines)
            if re.match(r'(import|from) mxnet\b', line)
        ]
        if 'import d2lpar as dp' not in lines and not mxnet:
            continue  # e.g. a first cell of %matplotlib inline alone
        if 'import d2lpar as dp' not in lines or not mxnet:
            return
        if lines.index('import d2lpar as dp') > mxnet[0]:
            lines.remove('import d2lpar as dp')
            while lines and not lines[-1].strip():
                lines.pop()
            lines.insert(mxnet[0], D2LPAR_FIRST)
            cell.source = '\n'.join(lines)
        return


def glued_values(executed):
    """name -> Markdown text of every value the book's build glued, from
    myst-nb's ``NAME.glue.json`` beside the executed notebook (or the
    ``scrapbook`` outputs of an executed ``.ipynb``); {} where none."""
    if not executed or not os.path.exists(executed):
        return {}
    if executed.endswith('.json'):
        with open(executed) as f:
            outputs = [dict(o, name=k) for k, o in json.load(f).items()]
    else:
        nb = nbformat.read(executed, as_version=4)
        outputs = [
            dict(o, name=o['metadata']['scrapbook']['name'])
            for cell in nb.cells
            for o in cell.get('outputs', [])
            if 'scrapbook' in o.get('metadata', {})
        ]
    values = {}
    for output in outputs:
        data = {
            k.rsplit('/', 2)[-2] + '/' + k.rsplit('/', 1)[-1]: v
            for k, v in output.get('data', {}).items()
        }  # without the 'application/papermill.record/' of hidden glue
        text = data.get('text/markdown', data.get('text/plain'))
        if text is not None:
            values[output['name']] = text
    return values


def convert(md_path, executed=None, framework='mxnet'):
    """The plain notebook of one chapter; ``executed`` is the book
    build's executed notebook of it (for the glued values); ``framework``
    picks the cells of a two-framework page (the shared cells are in
    both)."""
    if framework not in FRAMEWORKS:
        raise ValueError(f'framework {framework!r}: not one of {FRAMEWORKS}')
    nb = jupytext.read(md_path)
    if framework != 'mxnet' and framework not in frameworks(nb):
        raise ValueError(f'{md_path} has no #@tab {framework} cells')
    nb.cells = one_framework(nb.cells, framework)
    extras = chapter_extras(nb, framework)
    glued = glued_values(executed)
    cells = drop_plumbing(chapter_cells(nb, glued))
    if framework == 'mxnet':
        d2lpar_first(cells)
    title = next(
        (i for i, c in enumerate(cells) if c.cell_type == 'markdown'), -1
    )
    note = NOTE.format(
        version=importlib.metadata.version('d2lpar'),
        install=install_note(extras=extras),
        numbers=NUMBERS[bool(glued)],
    )
    cells.insert(
        title + 1,
        nbformat.v4.new_markdown_cell(note, metadata={'tags': ['install']}),
    )
    nb.cells = cells
    nb.metadata.pop('jupytext', None)  # a plain notebook, not a pair
    nbformat.validate(nb)
    return nb


def main(md_path, out_path, executed=None, framework='mxnet'):
    nb = convert(md_path, executed, framework)
    nbformat.write(nb, out_path)


def notebook_names(md_path):
    """(framework, file name) of each notebook a chapter becomes:
    NAME.ipynb (MXNet), and NAME-pytorch.ipynb where it has PyTorch
    cells."""
    name = os.path.splitext(os.path.basename(md_path))[0]
    names = [('mxnet', name + '.ipynb')]
    if 'pytorch' in frameworks(jupytext.read(md_path)):
        names.append(('pytorch', name + '-pytorch.ipynb'))
    return names


def main_many(out_dir, md_paths, executed_dir=None):
    """Convert every chapter into ``out_dir/NAME.ipynb`` (and
    ``NAME-pytorch.ipynb`` where it has PyTorch cells).

    One Python process for all chapters: starting one per chapter cost
    about a second each in every build. ``executed_dir`` holds the
    build's executed notebooks (NAME.ipynb), for the glued values.
    """
    for md_path in md_paths:
        name = os.path.splitext(os.path.basename(md_path))[0]
        executed = executed_dir and os.path.join(
            executed_dir, name + '.glue.json'
        )
        for framework, file_name in notebook_names(md_path):
            out = os.path.join(out_dir, file_name)
            main(md_path, out, executed, framework)


if __name__ == '__main__':
    args = sys.argv[1:]
    executed_dir = None
    if args[0] == '--executed':
        executed_dir, args = args[1], args[2:]
    if args[0] == '--into':
        main_many(args[1], args[2:], executed_dir)
    else:
        main(*args)
