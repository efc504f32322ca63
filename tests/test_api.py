"""The API page's promise: every name it documents is reached from
``import d2lpar as dp`` by attributes alone (``dp.multiprocess.launch``),
with no submodule import of its own."""

import os
import re
import subprocess
import sys

from conftest import ROOT

DIRECTIVE = re.compile(r'^\.\. auto\w+:: (d2lpar\.[\w.]+)', re.MULTILINE)


def documented_names():
    with open(os.path.join(ROOT, 'book', 'api.md')) as f:
        return DIRECTIVE.findall(f.read())


def test_pattern_reads_every_entry_of_the_page():
    """Every autodoc entry of the page, in any spelling (an rst
    directive or a MyST one), is one the pattern above reads, so the
    test below checks them all and cannot pass on an empty list."""
    with open(os.path.join(ROOT, 'book', 'api.md')) as f:
        entries = re.findall(r'\bauto\w+(?:::|\})', f.read())
    assert entries
    assert len(documented_names()) == len(entries)


def test_every_documented_name_is_reached_from_dp():
    """In a fresh interpreter that imports only d2lpar, each documented
    dotted name resolves attribute by attribute."""
    names = documented_names()
    script = (
        'import sys, d2lpar as dp\n'
        'missing = []\n'
        'for name in sys.argv[1:]:\n'
        '    obj = dp\n'
        '    try:\n'
        '        for part in name.split(".")[1:]:\n'
        '            obj = getattr(obj, part)\n'
        '    except AttributeError:\n'
        '        missing.append(name)\n'
        'print("\\n".join(missing))\n'
    )
    run = subprocess.run(
        [sys.executable, '-c', script, *names],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_docstrings_link_chapters_by_file_name():
    """A docstring names the chapter that teaches it with a :doc: link to
    a file of the book's table of contents (_toc.yml, the one list of
    chapter files), so the API page shows the chapter's current title;
    no docstring names a chapter in plain words, which goes stale when a
    chapter is renamed."""
    with open(os.path.join(ROOT, '_toc.yml')) as f:
        chapters = set(re.findall(r'(?:file|root): (\S+)', f.read()))
    linked, stale = [], []
    for folder, _, files in os.walk(os.path.join(ROOT, 'd2lpar')):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                source = f.read()
            for target in re.findall(r':doc:`/([\w/-]+)`', source):
                linked.append(target)
                assert target in chapters, f'{path}: no chapter {target}'
            stale += [
                f'{path}: {m}'
                for m in re.findall(
                    r'Taught in the [^.]*|the chapter (?:on|")[^.]*', source
                )
            ]
    assert len(linked) > 50
    assert stale == []
