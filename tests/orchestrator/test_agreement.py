"""κ against worked examples whose values are computed by hand."""

from __future__ import annotations

import pytest

from orchestrator.reward.agreement import cohen_kappa, fleiss_kappa


def test_cohen_wikipedia_example() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; A says yes 25/50, B 30/50: p_e = .5*.6 + .5*.4 = 0.5; κ = (.7-.5)/(1-.5) = 0.4.
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)


def test_cohen_three_categories_by_hand() -> None:
    # A: a a a b b tie; B: a a b b a tie. Agreement on items 0, 1, 3, 5: p_o = 4/6.
    # Both say a 3 times, b 2, tie 1: p_e = (3*3 + 2*2 + 1*1)/36 = 14/36; κ = (24 - 14)/(36 - 14) = 5/11.
    a = ["a", "a", "a", "b", "b", "tie"]
    b = ["a", "a", "b", "b", "a", "tie"]
    assert cohen_kappa(a, b) == pytest.approx(5 / 11)


def test_cohen_perfect_and_chance() -> None:
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == pytest.approx(1.0)
    # Opposite on two balanced categories: p_o = 0, p_e = 0.5 -> κ = -1.
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)


def test_cohen_degenerate_all_one_category_is_one() -> None:
    # p_e = 1: κ is 0/0; the labelers never disagreed, so 1.0 by definition.
    assert cohen_kappa(["tie"] * 4, ["tie"] * 4) == 1.0


def test_cohen_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="one label per item"):
        cohen_kappa(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="at least one item"):
        cohen_kappa([], [])


WIKIPEDIA_FLEISS = [  # 10 items x 14 raters, counts per category 1..5
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_wikipedia_example() -> None:
    # P-bar = 0.378, P-bar_e = 0.213, κ = 0.210 (Wikipedia, "Fleiss' kappa", worked example).
    ratings = [[f"c{j}" for j, n in enumerate(row) for _ in range(n)] for row in WIKIPEDIA_FLEISS]
    assert fleiss_kappa(ratings) == pytest.approx(0.2099, abs=5e-4)


def test_fleiss_small_case_by_hand() -> None:
    # 4 items x 2 raters: [a a] [a b] [b b] [b b]. p_a = 3/8, p_b = 5/8, P_e = 34/64;
    # P_i = 1, 0, 1, 1 -> P-bar = 3/4; κ = (48/64 - 34/64)/(30/64) = 14/30 = 7/15.
    assert fleiss_kappa([["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]) == pytest.approx(7 / 15)


def test_fleiss_degenerate_all_one_category_is_one() -> None:
    assert fleiss_kappa([["a", "a", "a"], ["a", "a", "a"]]) == 1.0


def test_fleiss_rejects_uneven_raters_naming_the_items() -> None:
    with pytest.raises(ValueError, match=r"same number of raters per item \(3, as item 0\); item 2 has 2"):
        fleiss_kappa([["a", "a", "b"], ["a", "b", "b"], ["a", "b"]])
    with pytest.raises(ValueError, match="at least 2 raters"):
        fleiss_kappa([["a"], ["b"]])
    with pytest.raises(ValueError, match="at least one item"):
        fleiss_kappa([])
