"""d2lpar.bench.timing: the one timing loop of the benchmarks."""

import pytest

from d2lpar.bench import timing


def test_median_of_the_timed_runs_after_warmup(monkeypatch):
    """fn runs warmup + repeats times; the median is taken over the
    timed runs only (clock readings stubbed: run i takes i seconds)."""
    ticks = iter(t for i in range(5) for t in (10 * i, 10 * i + i))
    monkeypatch.setattr(timing, 'perf_counter', lambda: next(ticks))
    calls = []
    assert timing.median_seconds(lambda: calls.append(1), 3, 2) == 3
    assert len(calls) == 5


def test_no_repeats_refused():
    """repeats=0 would have no median: a ValueError saying so."""
    with pytest.raises(ValueError, match='repeats=0'):
        timing.median_seconds(lambda: None, 0, 1)


def test_seconds_each_gives_every_timed_run_in_order(monkeypatch):
    """Run i takes i seconds (clock stubbed); the warm-up runs 0, 1 are
    left out and the others kept in order."""
    ticks = iter(t for i in range(5) for t in (10 * i, 10 * i + i))
    monkeypatch.setattr(timing, 'perf_counter', lambda: next(ticks))
    assert timing.seconds_each(lambda: None, 3, 2) == [2, 3, 4]


def test_interleaved_keeps_each_functions_best_round(monkeypatch):
    """Every function is timed once per round, rounds interleaved, and
    the smallest of its rounds is returned under its key."""
    seen = []
    rounds = {'a': iter([3.0, 1.0, 2.0]), 'b': iter([5.0, 6.0, 4.0])}

    def fake(fn, repeats, warmup):
        seen.append(fn())
        return next(rounds[seen[-1]])

    monkeypatch.setattr(timing, 'median_seconds', fake)
    best = timing.interleaved({'a': lambda: 'a', 'b': lambda: 'b'}, 3)
    assert best == {'a': 1.0, 'b': 4.0}
    assert seen == ['a', 'b'] * 3


@pytest.mark.parametrize(
    'a, b, verdict',
    [
        ([1.0, 2.0], [2.5, 3.0], 'faster than'),
        ([2.5, 3.0], [1.0, 2.0], 'slower than'),
        ([1.0, 2.6], [2.5, 3.0], 'not clearly different from'),
        ([2.0], [2.0], 'not clearly different from'),
    ],
)
def test_compare_times_needs_every_time_to_agree(a, b, verdict):
    assert timing.compare_times(a, b) == verdict


def test_compare_times_refuses_an_empty_setting():
    with pytest.raises(ValueError, match='got 0 and 2 values'):
        timing.compare_times([], [1.0, 2.0])


def test_ratio_text_keeps_the_digit_that_says_below_one():
    """A ratio off 1 by less than half a percent prints as many decimals
    as it takes not to read 1.00 ("the same"); others two; an exact 1 is
    1.00."""
    from d2lpar.bench.timing import ratio_text

    assert ratio_text(0.997) == '0.997'
    assert ratio_text(1.004) == '1.004'
    assert ratio_text(1.0) == '1.00'
    assert ratio_text(1.133) == '1.13'
    assert ratio_text(0.994) == '0.99'
    assert ratio_text(1.0004) == '1.0004'
    assert ratio_text(0.99996) == '0.99996'


def test_span_text_prints_one_number_when_the_ends_agree():
    """'12-12' says nothing a single '12' does not; a real range stays a
    range, at the digits asked for."""
    from d2lpar.bench.timing import span_text

    assert span_text([12.4, 12.2, 11.6]) == '12'
    assert span_text([12.4, 12.6]) == '12-13'
    assert span_text([0.123, 0.127], 2, ' to ') == '0.12 to 0.13'
    assert span_text([0.121, 0.124], 2, ' to ') == '0.12'
    with pytest.raises(ValueError, match='no values'):
        span_text([])


def test_where_in_places_a_value_against_a_range_ends_included():
    """Below the lowest, above the highest, and within otherwise, the
    ends themselves counting as within; the order of the values does not
    matter."""
    assert timing.where_in(3.9, [5.0, 4.0]) == 'below'
    assert timing.where_in(5.1, [5.0, 4.0]) == 'above'
    assert timing.where_in(4.0, [5.0, 4.0]) == 'within'
    assert timing.where_in(5.0, [5.0, 4.0]) == 'within'
    assert timing.where_in(4.5, [4.5]) == 'within'


def test_ratio_text_rounds_the_printed_digits_half_up():
    """A speed-up printed as 1.075 reads 1.08 in two decimals, as a
    reader rounds it (Python's format gives 1.07); 1.0749 stays 1.07."""
    from d2lpar.bench.timing import ratio_text

    assert ratio_text(1.075) == '1.08'
    assert ratio_text(1.0749) == '1.07'
    assert ratio_text(0.925) == '0.93'
    assert ratio_text(float('inf')) == 'inf'
