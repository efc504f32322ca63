"""Execute one chapter as the book build would, and say where its time goes.

Usage: .venv/bin/python scripts/run_page.py book/NAME.md [--quick] [--out DIR]

The chapter runs with nbclient in ``book/`` (the build's working folder,
so glue, data paths and the shared measurement file behave as in
``make book``); the executed notebook is written to DIR (default
/tmp/pages) and every cell's seconds are printed, slowest first. For a
developer trimming a chapter's run time; the build itself does not use it.
"""

import argparse
import datetime
import os
import sys
import time

import jupytext
import nbclient
import nbformat


def seconds(cell):
    """A cell's execution time from nbclient's timing metadata."""
    ex = cell.get('metadata', {}).get('execution', {})
    try:
        start = ex['iopub.execute_input']
        end = ex['shell.execute_reply']
    except KeyError:
        return 0.0
    parse = datetime.datetime.fromisoformat
    return (
        parse(end.replace('Z', '+00:00')) - parse(start.replace('Z', '+00:00'))
    ).total_seconds()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('page')
    parser.add_argument('--quick', action='store_true', help='D2LPAR_QUICK=1')
    parser.add_argument('--out', default='/tmp/pages')
    args = parser.parse_args(argv)
    if args.quick:
        os.environ['D2LPAR_QUICK'] = '1'
    # MXNet's compiled operator wrappers and the data files' bytes,
    # shared as in the build (scripts/build-book.sh).
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for var, folder in (
        ('D2LPAR_MXNET_CODE_CACHE', 'mxnet-code-cache'),
        ('D2LPAR_IDX_CACHE', 'idx-cache'),
    ):
        os.environ.setdefault(var, os.path.join(root, '_build', folder))
    page = os.path.abspath(args.page)
    nb = jupytext.read(page)
    start = time.monotonic()
    client = nbclient.NotebookClient(
        nb,
        timeout=1800,
        kernel_name='python3',
        resources={'metadata': {'path': os.path.dirname(page)}},
        allow_errors=True,
    )
    client.execute()
    total = time.monotonic() - start
    os.makedirs(args.out, exist_ok=True)
    name = os.path.splitext(os.path.basename(page))[0]
    out = os.path.join(args.out, name + '.ipynb')
    nbformat.write(nb, out)
    errors = [
        (i, o.get('ename'), o.get('evalue'))
        for i, c in enumerate(nb.cells)
        if c.cell_type == 'code'
        for o in c.get('outputs', [])
        if o.get('output_type') == 'error'
    ]
    cells = sorted(
        ((seconds(c), i, c.source.splitlines()[:1]) for i, c in
         enumerate(nb.cells) if c.cell_type == 'code'),
        reverse=True,
    )  # fmt: skip
    print(f'{name}: {total:.1f} s in all; executed notebook: {out}')
    for sec, i, first in cells[:10]:
        print(f'  cell {i:3d}: {sec:7.1f} s  {(first or [""])[0][:60]}')
    for i, ename, evalue in errors:
        print(f'  ERROR in cell {i}: {ename}: {evalue}', file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
