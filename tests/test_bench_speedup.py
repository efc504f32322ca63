"""d2lpar.bench.speedup: the speed-up of two devices, measured once."""

import json

import pytest

from d2lpar.bench import speedup


def _result(one, two, four=None, quick=False):
    rows = [
        dict(path='d2lpar', devices=1, rounds=one),
        dict(path='d2lpar', devices=2, rounds=two),
        dict(path='d2l', devices=1, rounds=[x * 2 for x in one]),
        dict(path='d2l', devices=2, rounds=[x * 3 for x in two]),
    ]
    if four:
        rows.append(dict(path='d2lpar', devices=4, rounds=four))
    for row in rows:
        row['limit_ms'] = 10.0
    return dict(rows=rows, quick=quick)


def _after(rounds):
    return dict(path='d2lpar', devices=1, rounds=rounds, limit_ms=10.0)


def test_speedups_pair_each_round():
    """Round i's speed-up is one device's time over two devices' time in
    the same round, never across rounds, and for the path asked for."""
    result = _result([100.0, 90.0, 120.0], [80.0, 60.0, 100.0], [50.0] * 3)
    assert speedup.speedups(result) == pytest.approx([1.25, 1.5, 1.2])
    assert speedup.speedups(result, k=4) == pytest.approx([2.0, 1.8, 2.4])
    assert speedup.speedups(result, path='d2l') == pytest.approx(
        [200 / 240, 180 / 180, 240 / 300]
    )
    assert speedup.speedup_range(result) == ('1.20', '1.50')


def test_a_range_near_one_keeps_the_digit_that_says_below_one():
    """0.997 is not 1.00: a round off 1 by less than half a percent
    prints three decimals in the range (bench.timing.ratio_text)."""
    result = _result([99.7, 113.3], [100.0, 100.0])
    assert speedup.speedup_range(result) == ('0.997', '1.13')


def test_two_devices_measures_once_then_reads(tmp_path, monkeypatch):
    """The first call measures and writes the file; a second call reads
    it without measuring; a file from the other mode or of another design
    is not reused."""
    calls = []

    def fake(device_counts, progress=None, after=False, **design):
        assert after  # every round ends with one device again
        calls.append(design)
        n = design['rounds']
        return dict(_result([100.0] * n, [80.0] * n), steps=design['steps'])

    monkeypatch.setattr(speedup, 'compare_training', fake)
    monkeypatch.delenv('D2LPAR_QUICK', raising=False)
    path = tmp_path / 'm' / 'two.json'
    first = speedup.two_devices(str(path))
    assert not first['reused'] and len(calls) == 1
    assert calls[0] == speedup.design(quick=False)
    assert json.loads(path.read_text())['quick'] is False
    second = speedup.two_devices(str(path))
    assert second['reused'] and len(calls) == 1
    assert second['rows'] == first['rows']
    monkeypatch.setenv('D2LPAR_QUICK', '1')
    third = speedup.two_devices(str(path))
    assert not third['reused'] and len(calls) == 2
    assert calls[1] == speedup.design(quick=True)
    # A file from another design (steps, rounds) is measured anew.
    monkeypatch.setattr(
        speedup, 'design', lambda quick: dict(steps=9, rounds=1)
    )
    fourth = speedup.two_devices(str(path))
    assert not fourth['reused'] and len(calls) == 3
    assert speedup.two_devices(str(path))['reused'] and len(calls) == 3
    # So is one measured another way (an older version of the module).
    monkeypatch.setattr(speedup, 'FORMAT', speedup.FORMAT + 1)
    fifth = speedup.two_devices(str(path))
    assert not fifth['reused'] and len(calls) == 4


def test_the_file_lives_in_the_books_build_folder(tmp_path, monkeypatch):
    """Inside the book (a folder with _config.yml and _toc.yml, or below
    it) the file is under its _build; elsewhere there is none."""
    (tmp_path / '_config.yml').write_text('')
    (tmp_path / '_toc.yml').write_text('')
    (tmp_path / 'book').mkdir()
    monkeypatch.chdir(tmp_path / 'book')
    assert speedup._build_dir() == str(tmp_path / '_build')
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / '_toc.yml').unlink()
    monkeypatch.chdir(tmp_path / 'elsewhere')
    assert speedup._build_dir() is None


def test_a_quick_run_keeps_the_full_measurement(tmp_path, monkeypatch):
    """In the book, a quick run (one page run with --quick) writes its own
    file: the full build's measurement is read again afterwards, not
    replaced and measured anew."""
    (tmp_path / '_config.yml').write_text('')
    (tmp_path / '_toc.yml').write_text('')
    monkeypatch.chdir(tmp_path)
    calls = []

    def fake(device_counts, progress=None, after=False, **design):
        calls.append(design['steps'])
        n = design['rounds']
        return dict(_result([100.0] * n, [80.0] * n), steps=design['steps'])

    monkeypatch.setattr(speedup, 'compare_training', fake)
    monkeypatch.delenv('D2LPAR_QUICK', raising=False)
    assert not speedup.two_devices()['reused']
    monkeypatch.setenv('D2LPAR_QUICK', '1')
    assert not speedup.two_devices()['reused']
    monkeypatch.delenv('D2LPAR_QUICK')
    assert speedup.two_devices()['reused']  # the full one, still there
    assert len(calls) == 2
    files = sorted(
        p.name for p in (tmp_path / '_build' / 'measurements').iterdir()
    )
    assert files == ['two-devices-quick.json', 'two-devices.json']


def test_a_disturbed_round_is_measured_again(tmp_path, monkeypatch):
    """A round in which a setting took over twice its fastest round is
    replaced, for every setting at once, by a fresh round; an undisturbed
    measurement is kept as it is."""
    calls = []

    def fake(
        device_counts, progress=None, steps=None, rounds=None, after=False
    ):
        calls.append((rounds, after))
        if len(calls) == 1:  # round 1's one-device step was disturbed
            return dict(_result([100.0, 1000.0], [80.0, 90.0]), steps=steps,
                        after=_after([120.0, 990.0]))  # fmt: skip
        return dict(_result([110.0], [85.0]), steps=steps,
                    after=_after([115.0]))  # fmt: skip

    monkeypatch.setattr(speedup, 'compare_training', fake)
    monkeypatch.setattr(
        speedup, 'design', lambda quick: dict(steps=4, rounds=2)
    )
    first = speedup.two_devices(str(tmp_path / 'a.json'))
    assert calls == [(2, True), (1, True)] and first['rerun'] == 1
    rounds = {(r['path'], r['devices']): r['rounds'] for r in first['rows']}
    assert rounds['d2lpar', 1] == [100.0, 110.0]
    assert rounds['d2lpar', 2] == [80.0, 85.0]  # the pair stays paired
    # and so does the one device measured last in the same round
    assert first['after']['rounds'] == [120.0, 115.0]
    assert first['after']['ms_per_step'] == pytest.approx(117.5)
    assert speedup.disturbed_rounds(first) == []
    quiet = _result([100.0, 120.0], [80.0, 90.0])
    assert speedup.disturbed_rounds(quiet) == []


def test_a_rerun_rounds_rate_runs_join_the_limit(tmp_path, monkeypatch):
    """The re-run round's rate runs join the limit's: the limit is the
    best rate seen while the benchmark ran, and every row's limit and
    ratio follow it."""
    calls = []

    def fake(
        device_counts, progress=None, steps=None, rounds=None, after=False
    ):
        calls.append(rounds)
        if len(calls) == 1:
            result = _result([100.0, 1000.0], [80.0, 90.0])
            runs = [50.0, 60.0]
        else:
            result = _result([110.0], [85.0])
            runs = [40.0, 80.0]
        return dict(result, steps=steps, gflops_runs=runs,
                    gflops=max(runs), flops_per_step=4e9)  # fmt: skip

    monkeypatch.setattr(speedup, 'compare_training', fake)
    monkeypatch.setattr(
        speedup, 'design', lambda quick: dict(steps=4, rounds=2)
    )
    result = speedup.two_devices(str(tmp_path / 'a.json'))
    assert result['gflops_runs'] == [50.0, 60.0, 40.0, 80.0]
    assert result['gflops'] == 80.0
    for row in result['rows']:
        assert row['limit_ms'] == pytest.approx(50.0)  # 4e9 at 80 GFLOP/s
        assert row['ratio'] == pytest.approx(row['ms_per_step'] / 50.0)


def test_a_round_faster_than_k_fold_is_disturbed():
    """Two devices more than twice as fast as one in a round is
    impossible (they add at most twice the arithmetic): that round is
    disturbed even when every round of each setting is within a factor
    of 2 of its fastest (a machine loaded throughout, as seen here)."""
    loaded = _result([3556.0, 4920.0, 6603.0], [898.0, 747.0, 539.0])
    assert speedup.disturbed_rounds(loaded) == [0, 1, 2]
    near = _result([200.0, 210.0, 190.0], [101.0, 99.0, 120.0])
    assert speedup.disturbed_rounds(near) == [1]


def test_a_round_still_disturbed_is_left_out_of_the_answer(
    tmp_path, monkeypatch
):
    """When every re-run is disturbed too, the round stays in the file
    (listed in ``left_out``) but not in the speed-ups the pages state;
    a result whose every round is disturbed keeps them all."""

    def fake(
        device_counts, progress=None, steps=None, rounds=None, after=False
    ):
        if rounds == 3:  # round 2's one-device step was disturbed
            one, two = [100.0, 110.0, 1000.0], [80.0, 85.0, 90.0]
        else:  # and so is every re-run of it
            one, two = [900.0], [95.0]
        return dict(_result(one, two), steps=steps)

    monkeypatch.setattr(speedup, 'compare_training', fake)
    monkeypatch.setattr(
        speedup, 'design', lambda quick: dict(steps=4, rounds=3)
    )
    result = speedup.two_devices(str(tmp_path / 'a.json'))
    assert result['rerun'] == 2 and result['left_out'] == [2]
    assert speedup.speedups(result) == pytest.approx([100 / 80, 110 / 85])
    assert speedup.speedup_range(result) == ('1.25', '1.29')
    everything = dict(_result([100.0], [80.0]), left_out=[0])
    assert speedup.speedups(everything) == pytest.approx([1.25])


def test_kept_rounds_leave_out_the_same_rounds_as_the_speedups():
    """A page's kept rounds and the answer's speed-ups drop the same
    disturbed rounds; the one-device-again row too; all of them when
    every round was disturbed would leave nothing, so none is dropped."""
    result = {
        'rows': [
            {'path': 'd2lpar', 'devices': 1, 'rounds': [50.0, 90.0, 52.0]},
            {'path': 'd2lpar', 'devices': 2, 'rounds': [40.0, 41.0, 39.0]},
        ],
        'after': {'rounds': [55.0, 99.0, 54.0]},
        'left_out': [1],
    }
    assert speedup.kept_rounds(result) == [50.0, 52.0]
    assert speedup.kept_rounds(result, 2) == [40.0, 39.0]
    assert speedup.kept_rounds(result, 'after') == [55.0, 54.0]
    assert speedup.speedups(result) == pytest.approx([50 / 40, 52 / 39])
    result['left_out'] = [0, 1, 2]
    assert speedup.kept_rounds(result) == [50.0, 90.0, 52.0]
    with pytest.raises(ValueError, match="path 'd2l' with devices=1"):
        speedup.kept_rounds(result, 1, 'd2l')
    del result['after']
    with pytest.raises(ValueError, match='after=True'):
        speedup.kept_rounds(result, 'after')


def test_slow_rounds_names_rounds_over_twice_the_fastest():
    """A round over ``factor`` times the fastest is named, one at exactly
    that bound is not; the factor can be changed."""
    assert speedup.slow_rounds([10.0, 20.0, 20.5, 9.0]) == [1, 2]
    assert speedup.slow_rounds([10.0, 20.0, 31.0], factor=3.0) == [2]
    assert speedup.slow_rounds([10.0, 20.0]) == []  # exactly twice
