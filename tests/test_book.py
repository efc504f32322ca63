"""d2lpar.book: full vs quick builds, glued text."""
import d2lpar as dp


def test_full_by_default(monkeypatch):
    """Without D2LPAR_QUICK the book trains 10 epochs on all data."""
    monkeypatch.delenv('D2LPAR_QUICK', raising=False)
    s = dp.book_settings()
    assert (s.quick, s.num_epochs, s.num_train) == (False, 10, None)
    assert 'full settings' in s.describe()


def test_quick_mode_says_so(monkeypatch):
    """D2LPAR_QUICK=1 shortens training and the page sentence says so;
    D2LPAR_QUICK=0 does not count as quick."""
    monkeypatch.setenv('D2LPAR_QUICK', '1')
    s = dp.book_settings()
    assert s.quick and s.num_epochs < 10 and s.num_train < 60000
    assert 'quick mode' in s.describe()
    monkeypatch.setenv('D2LPAR_QUICK', '0')
    assert not dp.book_settings().quick


def test_glue_text_glues_markdown(monkeypatch):
    """glue_text hands myst-nb a Markdown object whose text is exactly
    the formatted value (no repr quotes) and returns that text."""
    import myst_nb
    from IPython.display import Markdown
    seen = {}
    monkeypatch.setattr(myst_nb, 'glue',
                        lambda name, obj, display: seen.update(
                            name=name, obj=obj, display=display))
    assert dp.glue_text('acc', f'{0.8512:.2f}') == '0.85'
    assert seen['name'] == 'acc' and seen['display'] is False
    assert isinstance(seen['obj'], Markdown) and seen['obj'].data == '0.85'
