"""d2lpar.pages.book: full vs quick builds, glued text."""

import pytest

import d2lpar as dp


def test_full_by_default(monkeypatch):
    """Without D2LPAR_QUICK the book trains 10 epochs on the first
    FULL_NUM_TRAIN images, and the page sentence gives the number."""
    monkeypatch.delenv('D2LPAR_QUICK', raising=False)
    s = dp.book_settings()
    assert (s.quick, s.num_epochs) == (False, 10)
    assert s.num_train == dp.pages.FULL_NUM_TRAIN < 60000
    assert s.num_test == dp.pages.FULL_NUM_TEST < 10000
    assert 'full settings' in s.describe()
    assert f'{dp.pages.FULL_NUM_TRAIN:,}' in s.describe()
    assert f'{dp.pages.FULL_NUM_TEST:,} of the 10,000' in s.describe()


def test_quick_mode_says_so(monkeypatch):
    """D2LPAR_QUICK=1 shortens training and the page sentence says so;
    D2LPAR_QUICK=0 does not count as quick."""
    monkeypatch.setenv('D2LPAR_QUICK', '1')
    s = dp.book_settings()
    assert s.quick and s.num_epochs < 10 and s.num_train < 60000
    assert s.num_test < dp.pages.FULL_NUM_TEST
    assert 'quick mode' in s.describe()
    assert f'tested on {s.num_test:,} test images' in s.describe()
    monkeypatch.setenv('D2LPAR_QUICK', '0')
    assert not dp.book_settings().quick


def test_glue_text_sends_what_myst_nb_glue_sends(monkeypatch):
    """glue_text displays exactly the message myst-nb's own
    glue(name, Markdown(text), display=False) displays (so the build
    finds the key), whose Markdown is exactly the formatted value (no
    repr quotes), and returns that text."""
    import IPython.display
    from IPython.display import Markdown
    from myst_nb.ext import glue as myst_glue

    calls = []

    def record(*objs, **kwargs):
        calls.append((objs, kwargs))

    monkeypatch.setattr(IPython.display, 'display', record)
    monkeypatch.setattr(myst_glue, 'ipy_display', record)
    assert dp.glue_text('acc', f'{0.8512:.2f}') == '0.85'
    myst_glue.glue('acc', Markdown('0.85'), display=False)
    assert len(calls) == 2 and calls[0] == calls[1], calls
    (bundle,), kwargs = calls[0]
    assert bundle[myst_glue.GLUE_PREFIX + 'text/markdown'] == '0.85'
    assert kwargs['metadata']['scrapbook']['name'] == 'acc'


def test_glue_text_does_not_import_nbformat():
    """Gluing in a fresh process leaves nbformat (and jsonschema's
    seconds-long RFC 3987 parser) unimported: the reason glue_text does
    not call myst_nb.glue."""
    import subprocess
    import sys

    code = (
        'import sys, d2lpar as dp; dp.glue_text("k", "1"); '
        'print(sorted(m for m in ("nbformat", "jsonschema") '
        'if m in sys.modules))'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().splitlines()[-1] == '[]', out


def test_glue_text_prints_without_myst_nb(monkeypatch, capsys):
    """In plain Jupyter (no myst-nb) glue_text does not fail: it prints
    the value under its key and still returns the text."""
    import sys

    monkeypatch.setitem(sys.modules, 'myst_nb', None)  # import fails
    assert dp.glue_text('acc', f'{0.8512:.2f}') == '0.85'
    assert capsys.readouterr().out == 'acc: 0.85\n'


def test_show_source_drops_the_docstring_keeps_the_body():
    """show_source of a function shows its signature, comments and body
    but not one line of its numpy docstring."""
    import inspect

    from IPython.display import Code

    shown = dp.show_source(dp.split_batch)
    assert isinstance(shown, Code)
    assert shown.data.startswith('def split_batch(X, y, devices):')
    assert 'Parameters' not in shown.data and '"""' not in shown.data
    body = inspect.getsource(dp.split_batch).split('"""')[2]
    assert shown.data.endswith(body.rstrip('\n'))


def test_show_source_handles_classes_and_methods():
    """A class loses its own and its methods' docstrings; a method is
    shown dedented, so both are valid Python that compiles."""
    cls = dp.show_source(dp.TrainResult).data
    method = dp.show_source(dp.TrainResult.summary).data
    assert '"""' not in cls and 'def summary(self):' in cls
    assert method.startswith('def summary(self):')
    compile(cls, 'cls', 'exec')
    compile(method, 'method', 'exec')


def test_strip_docstrings_keeps_a_docstring_only_body_valid():
    """A function whose body was only a docstring becomes `...`."""
    assert (
        dp.pages.strip_docstrings('def f():\n    "Doc."\n')
        == 'def f():\n    ...'
    )


def test_show_source_rejects_objects_without_source():
    """A value with no source raises a TypeError that names it."""
    with pytest.raises(TypeError, match='show_source: 42'):
        dp.show_source(42)
