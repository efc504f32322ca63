"""d2lpar.seeds: comparing settings over seeds, by ranges
(compare_seeds) or seed by seed (compare_paired), and writing the
values for a page."""

import pytest
from numpy.testing import assert_allclose

import d2lpar as dp


def test_compare_seeds_needs_ranges_that_do_not_overlap():
    """Higher or lower only when the per-seed ranges are disjoint."""
    assert dp.compare_seeds([0.7, 0.72], [0.6, 0.65]) == 'higher'
    assert dp.compare_seeds([0.5, 0.55], [0.6, 0.65]) == 'lower'
    assert dp.compare_seeds([0.6, 0.7], [0.65, 0.66]).startswith('within')


def test_compare_seeds_refuses_a_setting_without_seeds():
    with pytest.raises(ValueError, match='got 2 and 0 values'):
        dp.compare_seeds([0.6, 0.7], [])


def test_seed_range_writes_mean_lowest_and_highest():
    """Three decimals: the mean, then the range in brackets."""
    assert dp.seeds.seed_range([0.7, 0.74, 0.72]) == '0.720 (0.700-0.740)'
    assert dp.seeds.seed_range([0.5]) == '0.500 (0.500-0.500)'
    with pytest.raises(ValueError, match='no values'):
        dp.seeds.seed_range([])


def test_differences_are_taken_seed_by_seed():
    """Seed i minus seed i, never a sorted or shuffled pairing: the
    range of the differences is not the difference of the ranges."""
    a, b = [0.70, 0.66, 0.68], [0.72, 0.60, 0.67]
    assert_allclose(dp.seeds.paired_differences(a, b), [-0.02, 0.06, 0.01])
    assert dp.seeds.difference_range(a, b) == '-0.020 to +0.060'
    assert dp.seeds.difference_range(b, a) == '-0.060 to +0.020'


def test_compare_paired_asks_every_seed_to_agree():
    """Seed by seed, not by ranges: overlapping ranges whose every pair
    goes one way are 'higher'; one seed the other way (or tied) makes
    'indistinguishable', even where the means differ a lot."""
    a, b = [0.60, 0.70, 0.80], [0.59, 0.69, 0.79]
    assert dp.compare_seeds(a, b).startswith('within')  # ranges overlap
    assert dp.seeds.compare_paired(a, b) == 'higher'
    assert dp.seeds.compare_paired(b, a) == 'lower'
    assert dp.seeds.compare_paired([0.9, 0.9, 0.5], [0.6, 0.6, 0.51]) == (
        'indistinguishable'
    )
    assert dp.seeds.compare_paired([0.7, 0.7], [0.6, 0.7]) == (
        'indistinguishable'
    )


def test_compare_paired_refuses_unpaired_values():
    """Different numbers of seeds cannot be paired."""
    with pytest.raises(ValueError, match='got 3 and 2 values'):
        dp.seeds.compare_paired([0.6, 0.7, 0.8], [0.6, 0.7])
    with pytest.raises(ValueError, match='got 0 and 0 values'):
        dp.seeds.compare_paired([], [])
    with pytest.raises(ValueError, match='got 1 and 2 values'):
        dp.seeds.difference_range([0.6], [0.6, 0.7])


def test_seed_table_puts_each_seed_in_its_column_and_the_mean_last():
    """Rows keep the seeds' order, so one seed's runs of two settings
    stand in one column; the last column is the row's mean."""
    table = dp.seeds.seed_table(
        {'k=1': [0.7, 0.8, 0.9], 'k=2, linear': [0.6, 0.75, 0.6]}, (4, 5, 6)
    )
    lines = table.splitlines()
    assert lines[0].split() == ['seed', '4', 'seed', '5', 'seed', '6', 'mean']
    assert lines[1].split() == ['k=1', '0.700', '0.800', '0.900', '0.800']
    assert lines[2].split()[2:] == ['0.600', '0.750', '0.600', '0.650']
    assert len({len(line) for line in lines}) == 1  # aligned columns
    with pytest.raises(ValueError, match="'k=1' has 2 values for 3 seeds"):
        dp.seeds.seed_table({'k=1': [0.7, 0.8]}, (0, 1, 2))
