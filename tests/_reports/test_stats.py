from math import comb

import numpy as np
import pytest

from gym._reports._stats import bootstrap_ci, paired_bootstrap, pass_at_k, pass_hat_k, transitions


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


def _episodes(outcomes: list[list[str]]) -> list:
    """Stored episodes: one inner list per task, one outcome per sample."""
    from gym._store import EpisodeRow

    return [
        EpisodeRow(
            id=f"e{t}-{i}",
            run_id="r",
            env_id="x/X-v0",
            env_version=0,
            task_id=f"t{t}",
            split="eval",
            sample_index=i,
            seed=i,
            policy="p",
            outcome=o,
            reward=1.0 if o == "pass" else 0.0,
        )  # fmt: skip
        for t, samples in enumerate(outcomes)
        for i, o in enumerate(samples)
    ]


def test_the_reported_pass_at_1_interval_does_not_collapse_at_20_of_20_or_0_of_20():
    from gym._reports._report import group_stats

    full = group_stats("all", _episodes([["pass"]] * 20), {}).pass_at_1
    assert full.value == 1.0 and full.hi == 1.0 and full.lo < 0.9
    assert full.lo == pytest.approx(0.025 ** (1 / 20), abs=1e-6)  # Clopper-Pearson, exactly
    none = group_stats("all", _episodes([["fail"]] * 20), {}).pass_at_1
    assert none.value == 0.0 and none.lo == 0.0 and none.hi > 0.1
    assert full.interval == none.interval == "clopper-pearson"


def test_the_pass_at_1_interval_covers_the_true_rate_at_n_20():
    """Seeded simulation: 2000 runs of 20 tasks at each rate; coverage of the 95% interval."""
    from gym._reports._stats import pass_rate_ci

    rng = np.random.default_rng(20)
    for p in (0.05, 0.5, 0.95):
        passes = rng.binomial(1, p, size=(2000, 20))
        covered = [
            lo <= p <= hi
            for _, lo, hi in (pass_rate_ci([(1, int(x)) for x in row]) for row in passes)
        ]
        assert np.mean(covered) >= 0.93, (p, np.mean(covered))


def test_repeated_samples_of_deterministic_tasks_are_worth_one_trial_per_task():
    from gym._reports._stats import effective_trials, pass_rate_ci

    one = pass_rate_ci([(1, 1)] * 15 + [(1, 0)] * 5)
    four = pass_rate_ci([(4, 4)] * 15 + [(4, 0)] * 5)
    assert one == four  # 4 identical samples add no information about the task set
    alike = [(4, 2)] * 10 + [(4, 1), (4, 3)] * 5
    assert effective_trials(alike) == 80  # tasks alike, samples vary: every episode counts
    assert 20 <= effective_trials([(4, 1), (4, 3), (4, 4), (4, 0)] * 5) <= 80


def test_clopper_pearson_refuses_impossible_counts():
    from gym._reports._stats import clopper_pearson

    with pytest.raises(ValueError):
        clopper_pearson(21, 20)
