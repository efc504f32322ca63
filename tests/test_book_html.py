"""Open the built book in headless Chromium (slow; after `make book`).

Checks what a reader sees: the training, machine-limit and profile chapters'
figures, their glued numbers, no error output, formulas typeset offline by the MathJax the
build installed. A screenshot is kept in _build/screenshots/.
"""

import os
import re
import shutil
import subprocess

import pytest
from conftest import CHAPTERS, ROOT

pytestmark = pytest.mark.slow

HTML = os.path.join(ROOT, '_build', 'html')
SHOTS = os.path.join(ROOT, '_build', 'screenshots')
FLAGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--virtual-time-budget=15000',
]


def chromium(page, *args, tmp_path):
    path = os.path.join(HTML, 'book', page)
    if not os.path.exists(path):
        pytest.fail(f'{path} does not exist: run `make book` first')
    exe = shutil.which('chromium')
    assert exe, 'chromium is not installed: run scripts/get-chromium.sh'
    run = subprocess.run(
        [
            exe,
            *FLAGS,
            f'--user-data-dir={tmp_path / "profile"}',
            *args,
            'file://' + path,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def visible_text(dom):
    dom = re.sub(r'<(script|style)\b.*?</\1>', '', dom, flags=re.S)
    return re.sub(r'\s+', ' ', re.sub(r'<[^>]+>', ' ', dom))


def assert_images(dom, count):
    """``count`` images (no logo is set), each a file the build wrote."""
    images = re.findall(r'<img [^>]*src="([^"]+)"', dom)
    assert len(images) == count, images
    for src in images:
        assert os.path.exists(
            os.path.normpath(os.path.join(HTML, 'book', src))
        ), src


def assert_clean(dom, text):
    """No traceback, no stderr output, no unresolved glue role."""
    assert 'Traceback (most recent call last)' not in text
    assert not re.search(r'class="[^"]*(traceback|stderr)', dom)
    assert 'glue:' not in text


def test_training_page_as_a_reader_sees_it(tmp_path):
    """The training chapter shows its plot, its glued accuracies, the
    book's one speed-up of two devices (a range of rounds), the devices it
    ran on, and no traceback or stderr."""
    dom = chromium('training.html', '--dump-dom', tmp_path=tmp_path)
    # One side-by-side plot of both runs per framework (MXNet's tab and
    # PyTorch's; the reader sees the chosen one), not the same file twice.
    assert_images(dom, 2)
    assert len(set(re.findall(r'<img [^>]*src="([^"]+)"', dom))) == 2
    text = visible_text(dom)
    assert re.search(
        r'reached a test accuracy of 0\.\d\d after \d+ '
        r'epochs',
        text,
    )
    # Ratios as dp.bench.ratio_text prints them: two decimals, more near 1.
    assert re.search(
        r'per step, two devices ran \d+\.\d{2,} to \d+\.\d{2,} times as '
        r'fast as one on this machine',
        text,
    )
    assert re.search(
        r'Per epoch, (in MXNet, )?two devices. median epoch was \d+\.\d{2,} '
        r'times as fast',
        text,
    )
    assert 'cpu(0) and cpu(1)' in text or 'gpu(0) and gpu(1)' in text
    assert_clean(dom, text)
    os.makedirs(SHOTS, exist_ok=True)
    shot = os.path.join(SHOTS, 'training.png')
    chromium(
        'training.html',
        f'--screenshot={shot}',
        '--window-size=1200,4000',
        tmp_path=tmp_path,
    )
    assert os.path.getsize(shot) > 10000


def test_limit_page_as_a_reader_sees_it(tmp_path):
    """The chapter on the machine's limit shows the benchmark beside the
    limit (one plot), with the limit, the steps' distance from it and
    the speed-up of two devices glued in."""
    dom = chromium('machine-limit.html', '--dump-dom', tmp_path=tmp_path)
    assert_images(dom, 1)
    text = visible_text(dom)
    assert re.search(r'At that rate a step would take \d+\.\d ms', text)
    # The same range as the training page: one measurement, read twice.
    assert re.search(
        r'\d+\.\d ms on one device and \d+\.\d ms on two \(medians of \d+ '
        r'rounds\), \d+\.\d+ and \d+\.\d+ times the limit; per step, two '
        r'devices ran \d+\.\d{2,} to \d+\.\d{2,} times as fast as one',
        text,
    )
    assert_clean(dom, text)


def test_profile_page_as_a_reader_sees_it(tmp_path):
    """The profile chapter shows each profiled step against its own
    limit, its operators in a plot (one per framework's tab: both are
    in the page, the reader's pick shows one), and the glued shares."""
    dom = chromium('step-profile.html', '--dump-dom', tmp_path=tmp_path)
    assert_images(dom, 2)
    text = visible_text(dom)
    assert re.search(
        r'1 device, all cores: step \d+\.\d ms = \d+\.\dx the limit', text
    )
    assert re.search(
        r'[Tt]he convolutions \(forward and backward\) take\s+\d+%', text
    )
    assert_clean(dom, text)


def test_formulas_typeset_offline(tmp_path):
    """MathJax comes from the book itself (no CDN) and typesets the
    train_batch chapter's formula: no raw TeX is left on the page."""
    dom = chromium('train-batch.html', '--dump-dom', tmp_path=tmp_path)
    scripts = re.findall(
        r'<script [^>]*src="([^"]*mathjax[^"]*)"', dom, flags=re.I
    )
    assert scripts and not any(s.startswith('http') for s in scripts)
    assert '<mjx-container' in dom
    assert r'\sum_{i \in B}' not in visible_text(dom)


def test_notebooks_offered_for_download():
    """The build ships a plain .ipynb of every chapter in html/notebooks/,
    where the preface links to it."""
    for name in CHAPTERS:
        notebook = os.path.join(HTML, 'notebooks', name[:-3] + '.ipynb')
        assert os.path.getsize(notebook) > 1000, notebook
    intro = open(os.path.join(HTML, 'book', 'intro.html')).read()
    assert 'href="../notebooks/training.ipynb"' in intro


def test_install_page_serves_the_wheel_it_names():
    """The install page names the wheel of the d2lpar the build ran and
    links it; html/dist/ serves it, its sdist and an index of both; the
    page's command is the one the notebooks' headers give."""
    import importlib.metadata

    import build_dist
    import chapter_notebook

    version = importlib.metadata.version('d2lpar')
    wheel = f'd2lpar-{version}-py3-none-any.whl'
    dist = os.path.join(HTML, 'dist')
    assert sorted(os.listdir(dist)) == sorted(
        [wheel, f'd2lpar-{version}.tar.gz', 'index.html']
    )
    page = open(os.path.join(HTML, 'book', 'install.html')).read()
    assert f'href="../dist/{wheel}"' in page
    assert 'href="../dist/index.html"' in page
    site = os.environ.get('D2LPAR_SITE_URL')
    if site is None:
        site = build_dist.config_value('html.baseurl')
    command = chapter_notebook.install_commands(version, site)[0]
    # Sphinx writes the command's quotes as &quot; in a code block.
    assert command in visible_text(page).replace('&quot;', '"')
    notebook = open(os.path.join(HTML, 'notebooks', 'training.ipynb')).read()
    assert json_text(command) in notebook


def json_text(text):
    import json

    return json.dumps(text)[1:-1]


def test_served_notebooks_read_with_the_build_s_numbers():
    """The downloaded chapters carry the values this build glued in
    their text, not the glue names, and say so in their header."""
    import json

    for name in ('training', 'split-batch'):
        source = open(os.path.join(ROOT, 'book', f'{name}.md')).read()
        keys = set(re.findall(r'\{glue:md\}`([\w.]+)`', source))
        with open(os.path.join(HTML, 'notebooks', f'{name}.ipynb')) as f:
            cells = json.load(f)['cells']
        text = '\n'.join(
            ''.join(c['source']) for c in cells if c['cell_type'] == 'markdown'
        )
        assert "those of the book's build" in text
        assert keys and not [k for k in keys if f'`{k}`' in text]
