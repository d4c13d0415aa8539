from math import comb

import numpy as np
import pytest

from gym._stats import bootstrap_ci, paired_bootstrap, pass_at_k, pass_hat_k, transitions


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),
        (10, 3, 5, 1 - comb(7, 5) / comb(10, 5)),  # 1 - 21/252
        (5, 0, 2, 0.0),
        (5, 5, 3, 1.0),
        (4, 3, 2, 1.0),  # fewer than k failures: every k-subset has a pass
        (200, 13, 10, 1 - comb(187, 10) / comb(200, 10)),
    ],
)
def test_pass_at_k_matches_the_combinatorial_definition(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12)


def test_pass_hat_k_is_the_chance_all_k_pass():
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_hat_k(7, 5, 1) == pytest.approx(5 / 7)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 4), (3, 1, 0)])
def test_invalid_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_bootstrap_is_reproducible_with_a_fixed_seed():
    data = np.random.default_rng(1).random(40)
    assert bootstrap_ci(data, seed=7) == bootstrap_ci(data, seed=7)
    assert bootstrap_ci(data, seed=7) != bootstrap_ci(data, seed=8)


def test_bootstrap_interval_of_a_known_proportion():
    data = [0.0, 1.0] * 50  # mean 0.5, standard error 0.05
    lo, hi = bootstrap_ci(data, seed=0, n_boot=4000)
    assert lo < 0.5 < hi
    assert hi - lo == pytest.approx(2 * 1.96 * 0.05, abs=0.03)


def test_bootstrap_of_constant_data_and_edge_sizes():
    assert bootstrap_ci([1.0] * 10) == (1.0, 1.0)
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    lo, hi = bootstrap_ci([])
    assert np.isnan(lo) and np.isnan(hi)


def test_paired_bootstrap_difference_and_interval():
    a = [0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    b = [1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    diff, lo, hi = paired_bootstrap(a, b, seed=3)
    assert diff == pytest.approx(3 / 8)
    assert 0.0 <= lo <= diff <= hi <= 1.0
    assert paired_bootstrap(a, a) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_transitions_table():
    before = [True, True, False, False, True]
    after = [True, False, True, False, True]
    assert transitions(before, after) == {
        "maintained": 2,
        "improved": 1,
        "regressed": 1,
        "persistent_failure": 1,
    }
