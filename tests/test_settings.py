"""d2lpar.settings: full vs quick builds."""
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
