"""Turn a book chapter (MyST Markdown) into a notebook for plain Jupyter.

Usage: python scripts/chapter_notebook.py book/CHAPTER.md OUT.ipynb
       python scripts/chapter_notebook.py --into OUT_DIR book/A.md ...

The book's pages use Sphinx features a plain Jupyter does not render:
``{literalinclude}`` directives (the library's source), ``{glue:md}``
roles (numbers computed by the page), admonitions and cross-references.
Here each becomes something readable with only ``d2lpar[notebook]``
installed: a literalinclude becomes a code cell displaying the source of
the same function (so the code a chapter explains is in the notebook),
a glue role becomes the glued name in code font (the cell that computes
it prints the value), an admonition a bold title, a role its text.
Called by scripts/build-book.sh and tests/test_install_notebooks.py.
"""

import os
import re
import sys

import jupytext
import nbformat

LITERALINCLUDE = re.compile(
    r'^(`{3,})\{literalinclude\}[ \t]+(?P<path>\S+)[ \t]*\n'
    r'(?P<options>(?:[ \t]*:[\w-]+:.*\n)*)\1[ \t]*$',
    re.M,
)
GLUE = re.compile(r'\{glue(?::\w+)?\}`([^`]+)`')
ROLE = re.compile(r'\{(?:doc|ref|numref|term|download|eq)\}`([^`]+)`')
FENCE_OPEN = re.compile(r'^(`{3,}|:{3,})\{([\w-]+)\}[ \t]*(.*)$')
OPTION = re.compile(r'^[ \t]*:[\w-]+:.*$')
NOTE = (
    'This notebook was made from a chapter of the book "Data '
    'parallelism, really" to run in plain Jupyter with '
    '`pip install "d2lpar[cpu,notebook]"`. Where the book shows a '
    'number computed by a cell, this text shows its name in code '
    'font; run the cells top to bottom to see the values.'
)


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


def plain_markdown(text):
    """Replace directives and roles that only Sphinx renders."""
    text = GLUE.sub(r'`\1`', text)
    text = ROLE.sub(lambda m: re.sub(r'\s*<[^>]*>$', '', m.group(1)), text)
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


def split_markdown(cell):
    """A markdown cell as markdown and source cells, in page order."""
    cells, start, text = [], 0, cell.source
    for match in LITERALINCLUDE.finditer(text):
        cells.append(
            nbformat.v4.new_markdown_cell(text[start : match.start()])
        )
        cells.append(source_cell(match.group('path'), match.group('options')))
        start = match.end()
    cells.append(nbformat.v4.new_markdown_cell(text[start:]))
    for c in cells:
        if c.cell_type == 'markdown':
            c.source = plain_markdown(c.source).strip('\n')
    return [c for c in cells if c.source.strip()]


def convert(md_path):
    """The plain notebook of one chapter."""
    nb = jupytext.read(md_path)
    cells = []
    for cell in nb.cells:
        cells += (
            split_markdown(cell) if cell.cell_type == 'markdown' else [cell]
        )
    title = next(
        (i for i, c in enumerate(cells) if c.cell_type == 'markdown'), -1
    )
    cells.insert(title + 1, nbformat.v4.new_markdown_cell(f'*{NOTE}*'))
    nb.cells = cells
    nb.metadata.pop('jupytext', None)  # a plain notebook, not a pair
    nbformat.validate(nb)
    return nb


def main(md_path, out_path):
    nb = convert(md_path)
    nbformat.write(nb, out_path)


def main_many(out_dir, md_paths):
    """Convert every chapter into ``out_dir/NAME.ipynb``.

    One Python process for all chapters: starting one per chapter cost
    about a second each in every build.
    """
    for md_path in md_paths:
        name = os.path.splitext(os.path.basename(md_path))[0]
        main(md_path, os.path.join(out_dir, name + '.ipynb'))


if __name__ == '__main__':
    if sys.argv[1] == '--into':
        main_many(sys.argv[2], sys.argv[3:])
    else:
        main(*sys.argv[1:])
